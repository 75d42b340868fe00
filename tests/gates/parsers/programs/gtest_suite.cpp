// Real GoogleTest program for the parser tests: cases chosen by --gtest_filter, and a
// SIGSEGV after the framework printed its summary when SEGV_AFTER_SUMMARY is set, and a
// global environment that GTEST_SKIPs every test when SKIP_IN_ENVIRONMENT is set.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

TEST(Pass, Arithmetic) { EXPECT_EQ(1 + 1, 2); }
TEST(Pass, Loop) {
    for (int i = 0; i < 3; ++i) EXPECT_GE(i * i, 0);
}
TEST(Fail, One) { EXPECT_EQ(1 + 1, 3); }
TEST(Skip, Always) { GTEST_SKIP() << "not on this box"; }
TEST(Skip, AlsoAlways) { GTEST_SKIP(); }
TEST(Pass, DISABLED_NeverRuns) { FAIL(); }
TEST(Crash, Segv) { std::raise(SIGSEGV); }

// GoogleTest 1.12 prints the tests this skip kept from running as `[  PASSED  ] N tests.`
class SkippingEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        if (std::getenv("SKIP_IN_ENVIRONMENT")) GTEST_SKIP() << "no device";
    }
};

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new SkippingEnvironment);
    int rc = RUN_ALL_TESTS();
    if (std::getenv("SEGV_AFTER_SUMMARY")) std::raise(SIGSEGV);
    return rc;
}
