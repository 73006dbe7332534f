// The doctest runner for ctrax_tests; every test lives in tests/<area>/test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
