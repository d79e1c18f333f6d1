package searchagent.elasticsearch;

import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.lucene.util.SetOnce;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * GET / and HEAD / (cluster name, version, tagline). In the distribution this
 * is the rest-root module, which is not on Maven Central; without it GET /
 * answers 405 and the Python client's ping()/info() fail.
 */
public class RootPlugin extends Plugin implements ActionPlugin {
  private final SetOnce<ClusterService> clusterService = new SetOnce<>();

  @Override
  public Collection<?> createComponents(PluginServices services) {
    clusterService.set(services.clusterService());
    return List.of();
  }

  @Override
  public Collection<RestHandler> getRestHandlers(Settings settings, NamedWriteableRegistry nwr,
      RestController rc, ClusterSettings cs, IndexScopedSettings iss, SettingsFilter sf,
      IndexNameExpressionResolver inr, Supplier<DiscoveryNodes> nodes, Predicate<NodeFeature> feat) {
    return List.of(new BaseRestHandler() {
      @Override
      public String getName() {
        return "main_action";
      }

      @Override
      public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
      }

      @Override
      public boolean canTripCircuitBreaker() {
        return false;
      }

      @Override
      protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        return channel -> {
          ClusterState state = clusterService.get().state();
          Build build = Build.current();
          XContentBuilder b = channel.newBuilder();
          if (request.hasParam("pretty") == false) {
            b.prettyPrint().lfAtEnd();
          }
          b.startObject()
              .field("name", clusterService.get().getNodeName())
              .field("cluster_name", state.getClusterName().value())
              .field("cluster_uuid", state.metadata().clusterUUID())
              .startObject("version")
              .field("number", build.qualifiedVersion())
              .field("build_flavor", "default")
              .field("build_type", build.type().displayName())
              .field("build_hash", build.hash())
              .field("build_date", build.date())
              .field("build_snapshot", build.isSnapshot())
              .field("lucene_version", org.apache.lucene.util.Version.LATEST.toString())
              .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
              .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
              .endObject()
              .field("tagline", "You Know, for Search")
              .endObject();
          channel.sendResponse(new RestResponse(RestStatus.OK, b));
        };
      }
    });
  }
}
