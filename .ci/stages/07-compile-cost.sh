# Compile cost (about a minute): tokchron/record.hpp, the header for a server's hot files,
# reaches no stream, thread or lock header and no standard header beyond the baseline's
# (<chrono> <vector> <string> <optional>) and bench/compile_cost/allowed_headers.txt (an exact
# answer for a given compiler); and its CPU cost per translation unit under g++ -O2, the minimum
# of 7 compilations of each probe taken in turns (bench/compile_cost/measure.py says why the
# minimum), stays under ceilings relative to the baseline: 1.8x for the header alone and 3.8x
# with a server's recording calls (timeline and live metrics). The ceilings are the figures
# measured when the stage was added (1.59x and 3.31x) plus about 15%, so that the recording
# header cannot grow unnoticed; the issue's 1.3x goal is not met yet (docs/testing.md, "Which
# header to include where"). The umbrella header's figures are printed beside them.
need_pkgs g++ python3
cd "$TOKCHRON_ROOT"
python3 bench/compile_cost/measure.py --check --runs 7 --umbrella-runs 3 \
  --max-ratio 1.8 --max-calls-ratio 3.8
