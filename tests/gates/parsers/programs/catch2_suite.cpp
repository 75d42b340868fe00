// Real Catch2 program for the parser tests (v2 single header on Debian 12, v3 elsewhere):
// cases chosen by tag, and a SIGSEGV after the summary when SEGV_AFTER_SUMMARY is set.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <csignal>
#include <cstdlib>

TEST_CASE("pass arithmetic", "[pass]") {
    CHECK(1 + 1 == 2);
    REQUIRE(2 * 3 == 6);
}

TEST_CASE("pass loop", "[pass]") {
    for (int i = 0; i < 4; ++i) CHECK(i * i >= 0);
}

TEST_CASE("fail one", "[fail]") {
    CHECK(1 + 1 == 3);
    CHECK(true);
}

TEST_CASE("empty no assertions", "[empty]") {}

TEST_CASE("fails as declared", "[xfail][!shouldfail]") { CHECK(1 + 1 == 3); }

TEST_CASE("hidden never runs by default", "[.][hidden]") { CHECK(false); }

// Exits 0 midway through the run (before its failing check and before the summary) when QUIT_MIDWAY is set.
TEST_CASE("quits midway", "[.][quit]") {
    if (std::getenv("QUIT_MIDWAY")) std::exit(0);
    CHECK(1 + 1 == 3);
}

#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR >= 3
TEST_CASE("skip always", "[skip]") { SKIP("not on this box"); }
#endif

int main(int argc, char** argv) {
    int rc = Catch::Session().run(argc, argv);
    if (std::getenv("SEGV_AFTER_SUMMARY")) std::raise(SIGSEGV);
    return rc;
}
