"""Run by the compiletools venv's python (not the test venv): load a
timing.json with compiletools' own loader and/or export it with
compiletools' own exporter, as corpus/perf.md describes.

    python ct_export_child.py validate TIMING.json
        -> {"rules": N, "phases": P}             (BuildTimer.from_json)
    python ct_export_child.py export TIMING.json ENDPOINT GITROOT
        -> {"trace_id": ..., "load_s": ..., "export_s": ...}
           export_buildtimer(timer, args, _processor=None): the production
           pipeline (BatchSpanProcessor + OTLP/HTTP) to ENDPOINT
"""

import json
import sys
import time
from types import SimpleNamespace


def main():
    from compiletools.build_timer import BuildTimer
    mode, path = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    timer = BuildTimer.from_json(path)
    load_s = time.perf_counter() - t0
    if mode == "validate":
        with open(path) as f:
            phases = len(json.load(f)["phases"])
        print(json.dumps({"rules": len(timer._collect_rules()), "phases": phases, "load_s": load_s}))
        return
    from compiletools.otel import export_buildtimer
    endpoint, gitroot = sys.argv[3], sys.argv[4]
    args = SimpleNamespace(
        variant=timer.variant if hasattr(timer, "variant") else "", backend="shake", verbose=0,
        otel_service_name=None, otel_resource_attr=None, otel_headers=None, otel_insecure=None,
        otel_protocol="http", otel_endpoint=endpoint, gitroot=gitroot)
    t1 = time.perf_counter()
    trace_id = export_buildtimer(timer, args, _processor=None)
    print(json.dumps({"trace_id": trace_id, "load_s": load_s, "export_s": time.perf_counter() - t1}))


if __name__ == "__main__":
    main()
