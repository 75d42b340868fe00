// Real doctest program for the parser tests: cases chosen by -tc filters, and a SIGSEGV
// after the framework printed its summary when SEGV_AFTER_SUMMARY is set.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>

TEST_CASE("pass_arithmetic") {
    CHECK(1 + 1 == 2);
    CHECK(2 * 3 == 6);
    REQUIRE(10 / 2 == 5);
}

TEST_CASE("pass_loop") {
    for (int i = 0; i < 5; ++i) CHECK(i * i >= 0);
}

TEST_CASE("fail_one") {
    CHECK(1 + 1 == 3);
    CHECK(true);
}

TEST_CASE("empty_no_assertions") {}

TEST_CASE("crash_in_case") { std::raise(SIGSEGV); }

TEST_CASE("skipped_by_decorator" * doctest::skip()) { CHECK(false); }

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    int rc = context.run();
    if (std::getenv("SEGV_AFTER_SUMMARY")) std::raise(SIGSEGV);
    return rc;
}
