"""A large build through the standard agent -> gateway topology.

agent (our receiver -> otlp_grpc, wait_for_result) -> gateway (otlp
receiver at its defaults: 4 MiB per gRPC message -> otlp_http) -> sink.
One request of a 100k-rule build is ~45 MB, ten times what the gateway
takes: the build arrives whole only because the receiver cuts it into
requests of max_request_spans spans.
"""

from . import hop


def test_large_build_arrives_whole_through_a_default_grpc_hop(collector_binary, big_build, diag, tmp_path,
                                                              record_result):
    run = hop.through_default_grpc_hop(collector_binary, big_build, diag, tmp_path)
    record_result(run.numbers)
    run.assert_whole()
