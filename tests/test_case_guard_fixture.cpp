// Not a test suite: the fixture of test_case_guard_self_test (tests/CMakeLists.txt).
// Its test names are the kind catch_discover_tests mangles; the self-test registers
// them through CatchAddTests.cmake and expects tests/check_test_cases_ran.py to name the
// one that never ran.
#include <catch2/catch.hpp>

TEST_CASE("guard fixture: a plain name") { CHECK(true); }

TEST_CASE("guard fixture; a name split at the semicolon") { CHECK(true); }

TEST_CASE("guard fixture with a comma, escaped by catch_discover_tests") { CHECK(true); }
