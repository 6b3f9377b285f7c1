# Dependencies from Debian's -dev packages (installed by scripts/setup).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(RapidJSON REQUIRED)          # rapidjson-dev: SAX parsing with number lexemes kept
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)   # NFC
find_package(CLI11 REQUIRED)              # libcli11-dev
find_package(OpenSSL REQUIRED)            # libssl-dev: https for the hub and image-URL clients
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)              # zlib1g-dev (with libpng-dev): tests make PNG bombs
find_package(JPEG REQUIRED)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)
# FFmpeg's libraries (libavformat-dev, libavcodec-dev, libswscale-dev): video demuxing, decoding
# and the RGB conversion of request videos.
if(CLEF_VIDEO)
  pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libswscale libavutil)
endif()
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

# cpp-httplib 0.57.1, clef's one copy: built from the pinned llama.cpp tree's vendor/cpp-httplib
# (the copy llama.cpp's own server uses), with OpenSSL for https. Its warnings are not ours.
# CPPHTTPLIB_LISTEN_BACKLOG: a burst of connections while the accept thread is descheduled must
# not overflow the accept queue (the library's default is 128; Linux caps it at somaxconn).
set(CLEF_HTTPLIB_DIR "${CLEF_LLAMA_DIR}/vendor/cpp-httplib")
add_library(clef_httplib STATIC "${CLEF_HTTPLIB_DIR}/httplib.cpp")
target_include_directories(clef_httplib SYSTEM PUBLIC "${CLEF_HTTPLIB_DIR}")
target_compile_definitions(clef_httplib PUBLIC CPPHTTPLIB_OPENSSL_SUPPORT
                                               CPPHTTPLIB_LISTEN_BACKLOG=4096)
target_compile_options(clef_httplib PRIVATE -w)
target_link_libraries(clef_httplib PUBLIC OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
add_library(clef::httplib ALIAS clef_httplib)
