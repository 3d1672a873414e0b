// Input that cmake/check_test_names.cmake must refuse (CTest "test_names_catch_bad"); never
// compiled.
TEST_CASE("two halves; CTest would split them", "[fixture]") {}
TEST_CASE("a bracket [here] would too", "[fixture]") {}
