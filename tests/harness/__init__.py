"""The test code every suite under tests/ shares (imported as `harness.<module>`;
tests/pytest.ini and `PYTHONPATH=tests` put tests/ on the import path).

    collector       config rendering, start / health / stop of the collector process
    otlp            decoding OTLP bodies with opentelemetry-proto
    otlp_sink       the OTLP/HTTP protobuf sink the collector exports to
    sink_recording  the sink's optional copy of each body on disk (CT_SINK_RECORD_DIR)
    reference       corpus access: invocation dirs, decoded reference spans
    diagdir         adding good and broken builds to a watched directory atomically
    checks          waiting for spans, comparing a trace with the reference
    service         the collector run as a deployment runs it (EnvironmentFile, user)
    packaged        the packaged config on scratch state: chaos and soak
    ctrun           one real ct-cake build in a minimal environment, watched
    projects        the generated one-commit C++ projects real builds run on
    ctotel_ids      the deterministic ctotel/v1 trace and span ids
    clang_truth     clang -ftime-trace files read by ClangBuildAnalyzer's rules, independently of ours
    bench_builds    finished builds in bulk and process CPU/RSS, for benchmarks
    bench_inputs    rust/bench/inputs.py, the synthetic N-rule timing.json generator
    tcp_proxy       a TCP proxy a test cuts and restores (a backend unreachable), in or out of process
"""
