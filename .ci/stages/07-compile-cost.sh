# Compile cost (under a minute): tokchron/record.hpp, the header for a server's hot files,
# reaches no stream, thread or lock header and no standard header beyond the baseline's
# (<chrono> <vector> <string> <optional>) and bench/compile_cost/allowed_headers.txt (a fixed
# answer for a given compiler), and a translation unit that includes it and makes a server's
# recording calls costs at most 1.3x the baseline's CPU time under g++ -O2 (the minimum of 7
# compilations of each, taken in turns: see bench/compile_cost/measure.py for why the minimum).
# The umbrella header's figures are printed beside them (docs/testing.md, "Which header to
# include where").
need_pkgs g++ python3
cd "$TOKCHRON_ROOT"
python3 bench/compile_cost/measure.py --check --runs 7 --umbrella-runs 3
