package searchagent.elasticsearch;

import java.nio.file.Path;
import java.util.List;
import org.elasticsearch.common.settings.Settings;

/**
 * One node of a loopback Elasticsearch 9 cluster: the jar, classpath plugins and start-up of
 * {@link SingleNode}, with cluster discovery instead of {@code discovery.type=single-node}. Every
 * node is master-eligible and holds data; the nodes find each other through {@code
 * discovery.seed_hosts} (every node's transport address) and the first start bootstraps the
 * cluster from {@code cluster.initial_master_nodes} (every node's name). Loopback only, no
 * X-Pack, so bootstrap checks are not enforced and there is no security.
 *
 * <p>Usage: {@code ClusterNode HOME_DIR CLUSTER_NAME NODE_NAME HTTP_PORT TRANSPORT_PORT SEED_HOSTS
 * MASTER_NODES [STOP_WITH_PID]}, the lists comma-separated (e.g. {@code
 * 127.0.0.1:9501,127.0.0.1:9502,127.0.0.1:9503} and {@code es-0,es-1,es-2}).
 */
public final class ClusterNode {
  private ClusterNode() {}

  static Settings settings(
      Path home,
      String cluster,
      String name,
      int httpPort,
      int transportPort,
      List<String> seeds,
      List<String> masters) {
    return Settings.builder()
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("cluster.name", cluster)
        .put("node.name", name)
        .put("network.host", "127.0.0.1")
        .put("http.port", httpPort)
        .put("transport.port", transportPort)
        .putList("discovery.seed_hosts", seeds)
        .putList("cluster.initial_master_nodes", masters)
        // Tests run on small, shared disks: never flip indices to read-only.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .put("logger.level", System.getProperty("es.logger.level", "INFO"))
        .build();
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 7 || args.length > 8) {
      System.err.println(
          "usage: ClusterNode HOME_DIR CLUSTER_NAME NODE_NAME HTTP_PORT TRANSPORT_PORT"
              + " SEED_HOSTS MASTER_NODES [STOP_WITH_PID]");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    int httpPort = Integer.parseInt(args[3]);
    Settings settings =
        settings(
            home,
            args[1],
            args[2],
            httpPort,
            Integer.parseInt(args[4]),
            List.of(args[5].split(",")),
            List.of(args[6].split(",")));
    SingleNode.serve(
        settings,
        String.format(
            "node %s of cluster %s started on http://127.0.0.1:%d (transport %s)",
            args[2], args[1], httpPort, args[4]),
        args.length == 8 ? args[7] : null);
  }
}
