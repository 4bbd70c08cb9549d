# The live server metrics (include/tokchron/live/) under ThreadSanitizer: the lock-free
# recording path, shard claiming and retiring as writer threads come and go, and scrapes running
# concurrently with writers (tests/live/stress_test.cpp checks every scrape is consistent and
# monotone and the final totals exact), plus the collector tests. Only the small
# tokchron_live_tests binary is built, in stage 30's TSan build directory with the same flags,
# so the configuration and the ccache objects are shared; about a minute on 2 cores.
tsan=$(tc_dir tsan)
echo "--- clang++ TSan: live metrics and collector"
tc_build tsan tokchron_live_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" TOKCHRON_STRESS_SCALE=2 \
  "$tsan/tests/tokchron_live_tests"
