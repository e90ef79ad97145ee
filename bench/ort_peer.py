#!/usr/bin/env python3
"""ONNX Runtime peer for `ingot bench --against ort` and `ingot compare --against ort`, on the
Python onnxruntime package. ingot never links ONNX Runtime: it starts this script and talks to
it over stdin/stdout, one line per message.

    python3 bench/ort_peer.py

Protocol (the same as bench/ort_peer.js). Every request gets exactly one reply line, either
"ok ..." or "error MESSAGE". Paths are the rest of the line (they may hold spaces).
  <- hello runtime=onnxruntime version=V python=V maxrss_kb=N await_overhead_ms=0
     (sent once at start; run is synchronous here, so there is no await overhead)
  -> load THREADS MODEL     session with intra_op_num_threads=THREADS, inter_op_num_threads=1,
                            ORT_ENABLE_ALL, ORT_SEQUENTIAL, CPUExecutionProvider
  <- ok maxrss_kb=N
  -> inputs FILE.npz        the feeds for later runs (keys are input names)
  <- ok
  -> run N [IDLE_MS]        N runs, each after IDLE_MS ms asleep (default 0; ingot bench
                            --idle-time); each latency is wall-clock ms around session.run()
  <- ok T1 T2 ... TN
  -> outputs FILE.npz       one run; writes the outputs (keys are output names)
  <- ok
  -> stats
  <- ok maxrss_kb=N
  -> quit                   exits 0 (so does end of input)
"""
import platform
import resource
import sys
import time


def reply(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def maxrss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def one_line(e):
    return " ".join(str(e).split())


def main():
    try:
        import numpy as np
        import onnxruntime as ort
    except Exception as e:  # noqa: BLE001
        reply("error cannot import onnxruntime: " + one_line(e))
        return 1
    reply("hello runtime=onnxruntime version=%s python=%s maxrss_kb=%d await_overhead_ms=0"
          % (ort.__version__, platform.python_version(), maxrss()))
    session = None
    feeds = None
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        if line == "quit":
            break
        cmd, _, arg = line.partition(" ")
        try:
            if cmd == "load":
                threads, _, model = arg.partition(" ")
                so = ort.SessionOptions()
                so.intra_op_num_threads = int(threads)
                so.inter_op_num_threads = 1
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
                reply("ok maxrss_kb=%d" % maxrss())
            elif cmd == "inputs":
                if session is None:
                    raise RuntimeError("no model loaded")
                with np.load(arg) as z:
                    arrays = {k: z[k] for k in z.files}
                feeds = {}
                for i in session.get_inputs():
                    if i.name not in arrays:
                        raise RuntimeError("%s has no array for input %s" % (arg, i.name))
                    feeds[i.name] = arrays[i.name]
                reply("ok")
            elif cmd == "run":
                if session is None or feeds is None:
                    raise RuntimeError("no model or inputs")
                count, _, idle = arg.partition(" ")
                idle_s = float(idle or 0) / 1e3
                times = []
                for _ in range(int(count)):
                    if idle_s > 0:
                        time.sleep(idle_s)
                    t0 = time.perf_counter()
                    session.run(None, feeds)
                    times.append("%.6f" % ((time.perf_counter() - t0) * 1e3))
                reply("ok " + " ".join(times))
            elif cmd == "outputs":
                if session is None or feeds is None:
                    raise RuntimeError("no model or inputs")
                outs = session.run(None, feeds)
                names = [o.name for o in session.get_outputs()]
                np.savez(arg, **dict(zip(names, outs)))
                reply("ok")
            elif cmd == "stats":
                reply("ok maxrss_kb=%d" % maxrss())
            else:
                raise RuntimeError("unknown request: " + cmd)
        except Exception as e:  # noqa: BLE001
            reply("error " + one_line(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
