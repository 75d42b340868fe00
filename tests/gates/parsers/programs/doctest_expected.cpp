// Real doctest program for the counting rules: three passing cases (for --first/--last),
// and cases doctest grades itself: may_fail, should_fail, expected_failures.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

TEST_CASE("pass_a") { CHECK(1 + 1 == 2); }
TEST_CASE("pass_b") { CHECK(2 + 2 == 4); }
TEST_CASE("pass_c") { CHECK(3 + 3 == 6); }

TEST_CASE("mayfail_fails" * doctest::may_fail()) { CHECK(1 + 1 == 3); CHECK(true); }
TEST_CASE("mayfail_passes" * doctest::may_fail()) { CHECK(1 + 1 == 2); }
TEST_CASE("shouldfail_fails" * doctest::should_fail()) { CHECK(1 + 1 == 3); }
TEST_CASE("shouldfail_passes" * doctest::should_fail()) { CHECK(1 + 1 == 2); }
TEST_CASE("expected_two_fails_two" * doctest::expected_failures(2)) { CHECK(1 == 2); CHECK(1 == 3); }
TEST_CASE("expected_two_fails_one" * doctest::expected_failures(2)) { CHECK(1 == 2); CHECK(true); }

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    return context.run();
}
