# Dependencies from Debian's -dev packages (installed by scripts/setup).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(RapidJSON REQUIRED)          # rapidjson-dev: SAX parsing with number lexemes kept
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)   # NFC
find_package(CLI11 REQUIRED)              # libcli11-dev
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)   # libcpp-httplib-dev (compiled, with OpenSSL)
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)
if(CLEF_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(CLEF_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

add_library(clef_rapidjson INTERFACE)
if(TARGET RapidJSON)
  target_link_libraries(clef_rapidjson INTERFACE RapidJSON)
else()
  target_include_directories(clef_rapidjson SYSTEM INTERFACE ${RapidJSON_INCLUDE_DIRS} ${RAPIDJSON_INCLUDE_DIRS})
endif()
