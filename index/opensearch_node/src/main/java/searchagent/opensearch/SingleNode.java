package searchagent.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * A single-node OpenSearch cluster in one JVM, for tests and small corpora.
 *
 * <p>Usage: {@code java -jar opensearch-node.jar HOME_DIR HTTP_PORT [PID]}.
 * The node keeps its data and logs under HOME_DIR, answers HTTP on
 * 127.0.0.1:HTTP_PORT and runs until the process gets SIGTERM/SIGINT, or,
 * when PID is given, until process PID ends (a test run that started it);
 * either way it closes cleanly.
 *
 * <p>Netty4 (HTTP and transport) and analysis-common (the language analyzers
 * and stemmers) are loaded as classpath plugins, so no plugin directory is
 * needed. Constructing {@link Node} directly, rather than through the
 * distribution's bootstrap, skips the production bootstrap checks (heap size,
 * mmap count, file descriptors), which a developer machine may not pass.
 */
public final class SingleNode {

  /** {@link Node} with classpath plugins (the constructor is protected). */
  static final class PluginNode extends Node {
    PluginNode(Settings settings, Collection<Class<? extends Plugin>> plugins) {
      super(
          InternalSettingsPreparer.prepareEnvironment(
              settings, Map.of(), null, () -> "node-0"),
          plugins,
          true);
    }
  }

  private SingleNode() {}

  static Settings nodeSettings(Path home, int httpPort) {
    return Settings.builder()
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("cluster.name", "search-agent")
        .put("node.name", "node-0")
        .put("discovery.type", "single-node")
        .put("network.host", "127.0.0.1")
        .put("http.port", httpPort)
        .put("transport.port", (httpPort + 100) + "-" + (httpPort + 199))
        .put("http.type", "netty4")
        .put("transport.type", "netty4")
        // Tests run on small, shared disks: never flip indices to read-only.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
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

  public static void main(String[] args) throws Exception {
    if (args.length != 2 && args.length != 3) {
      System.err.println("usage: SingleNode HOME_DIR HTTP_PORT [STOP_WITH_PID]");
      System.exit(2);
    }
    Path home = Paths.get(args[0]).toAbsolutePath();
    int httpPort = Integer.parseInt(args[1]);
    Files.createDirectories(home.resolve("data"));
    Files.createDirectories(home.resolve("logs"));
    Node node =
        new PluginNode(
            nodeSettings(home, httpPort),
            List.of(Netty4Plugin.class, CommonAnalysisPlugin.class));
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    node.close();
                  } catch (Exception e) {
                    System.err.println("closing the node failed: " + e);
                  } finally {
                    stopped.countDown();
                  }
                },
                "node-shutdown"));
    node.start();
    if (args.length == 3) {
      stopWith(Long.parseLong(args[2]));
    }
    System.out.println("opensearch node started: http://127.0.0.1:" + httpPort);
    stopped.await();
  }
}
