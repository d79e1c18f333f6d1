package searchagent.elasticsearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.ClasspathNode;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.netty4.Netty4Plugin;

/**
 * A single-node Elasticsearch 9 in one JVM, from Maven Central jars only: the
 * server, the Netty4 transport and this project's RootPlugin (GET /) and
 * EnglishAnalysisPlugin as classpath plugins. Loopback only, single-node
 * discovery, no X-Pack (so no security).
 *
 * <p>Usage: {@code SingleNode HOME_DIR HTTP_PORT [STOP_WITH_PID]}. With a pid,
 * the node stops by itself once that process ends.
 */
public final class SingleNode {
  private SingleNode() {}

  static Settings settings(Path home, int port) {
    return Settings.builder()
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("cluster.name", "search-agent")
        .put("node.name", "node-0")
        .put("discovery.type", "single-node")
        .put("network.host", "127.0.0.1")
        .put("http.port", port)
        .put("transport.port", (port + 100) + "-" + (port + 199))
        // Tests run on small, shared disks: never flip indices to read-only.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .put("logger.level", System.getProperty("es.logger.level", "INFO"))
        .build();
  }

  /** Exits the JVM (running the shutdown hooks) once process {@code pid} ends. */
  static void stopWith(long pid) {
    Thread watchdog =
        new Thread(
            () -> {
              while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                try {
                  Thread.sleep(1000);
                } catch (InterruptedException e) {
                  return;
                }
              }
              System.out.println("process " + pid + " ended; stopping the node");
              System.exit(0);
            },
            "stop-with-" + pid);
    watchdog.setDaemon(true);
    watchdog.start();
  }

  /**
   * Starts a node with {@code settings} and blocks until the JVM exits; with {@code stopWithPid}
   * (or null) the node stops by itself once that process ends.
   */
  static void serve(Settings settings, String banner, String stopWithPid) throws Exception {
    long t0 = System.nanoTime();
    Path home = Path.of(settings.get("path.home"));
    for (String dir : List.of("config", "data", "logs")) {
      Files.createDirectories(home.resolve(dir));
    }
    String name = settings.get("node.name");
    LogConfigurator.configureWithoutConfig(settings);
    Environment env =
        InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> name);
    List<Class<? extends Plugin>> plugins =
        List.of(Netty4Plugin.class, RootPlugin.class, EnglishAnalysisPlugin.class);
    Node node = new ClasspathNode(env, plugins);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    node.close();
                  } catch (Exception e) {
                    System.err.println("node close failed: " + e);
                  } finally {
                    stopped.countDown();
                  }
                },
                "node-shutdown"));
    node.start();
    System.out.printf("%s in %.1f s%n", banner, (System.nanoTime() - t0) / 1e9);
    if (stopWithPid != null) {
      stopWith(Long.parseLong(stopWithPid));
    }
    stopped.await();
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || args.length > 3) {
      System.err.println("usage: SingleNode HOME_DIR HTTP_PORT [STOP_WITH_PID]");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    int port = Integer.parseInt(args[1]);
    serve(
        settings(home, port),
        "elasticsearch node started on http://127.0.0.1:" + port,
        args.length == 3 ? args[2] : null);
  }
}
