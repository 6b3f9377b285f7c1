# Builds ggml, libllama and libmtmd from the pinned tree fetched by scripts/fetch-llama, as a static
# subproject with llama.cpp's own tests, tools, examples and server off.
set(CLEF_LLAMA_DIR "${PROJECT_SOURCE_DIR}/third_party/llama.cpp" CACHE PATH "pinned llama.cpp tree")
if(NOT EXISTS "${CLEF_LLAMA_DIR}/CMakeLists.txt")
  message(FATAL_ERROR "llama.cpp not found in ${CLEF_LLAMA_DIR}: run ./scripts/setup (or ./scripts/fetch-llama) first")
endif()

set(BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
foreach(opt LLAMA_BUILD_TESTS LLAMA_BUILD_TOOLS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_SERVER
            LLAMA_BUILD_APP LLAMA_BUILD_COMMON LLAMA_OPENSSL LLAMA_SUBPROCESS LLAMA_ALL_WARNINGS
            LLAMA_BUILD_UI MTMD_VIDEO GGML_BUILD_TESTS GGML_BUILD_EXAMPLES)
  set(${opt} OFF CACHE BOOL "" FORCE)
endforeach()
set(LLAMA_BUILD_MTMD ON CACHE BOOL "" FORCE)
set(LLAMA_BUILD_IS_DEV OFF CACHE BOOL "" FORCE)

add_subdirectory("${CLEF_LLAMA_DIR}" "${CMAKE_BINARY_DIR}/llama.cpp" EXCLUDE_FROM_ALL SYSTEM)

# llama-ext.h (llama_set_embeddings_nextn and friends) is an uninstalled, C++-linkage staging
# header of the pinned tree: only the backbone module includes it, through this target.
add_library(clef_llama_ext INTERFACE)
target_include_directories(clef_llama_ext SYSTEM INTERFACE "${CLEF_LLAMA_DIR}/src")
target_link_libraries(clef_llama_ext INTERFACE llama)
