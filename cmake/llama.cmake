# Builds ggml, libllama and libmtmd from the pinned tree fetched by scripts/fetch-llama, as a static
# subproject with llama.cpp's own tests, tools, examples and server off.
set(CLEF_LLAMA_DIR "${PROJECT_SOURCE_DIR}/third_party/llama.cpp" CACHE PATH "pinned llama.cpp tree")
if(NOT EXISTS "${CLEF_LLAMA_DIR}/CMakeLists.txt")
  message(FATAL_ERROR "llama.cpp not found in ${CLEF_LLAMA_DIR}: run ./scripts/setup (or ./scripts/fetch-llama) first")
endif()

# Shared libraries (issue 27): a ggml backend shipped prebuilt (libggml-vulkan.so of the same pinned
# tree, from npm) is a module that NEEDs libggml-base.so. With ggml-base a shared library of the
# same source, the module binds to clef's one copy (its fp16 tables, logger and backend registry)
# instead of loading a second. libllama, libmtmd and ggml-cpu follow (llama.cpp's own default).
set(BUILD_SHARED_LIBS ON CACHE BOOL "" FORCE)
foreach(opt LLAMA_BUILD_TESTS LLAMA_BUILD_TOOLS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_SERVER
            LLAMA_BUILD_APP LLAMA_BUILD_COMMON LLAMA_OPENSSL LLAMA_SUBPROCESS LLAMA_ALL_WARNINGS
            LLAMA_BUILD_UI MTMD_VIDEO GGML_BUILD_TESTS GGML_BUILD_EXAMPLES)
  set(${opt} OFF CACHE BOOL "" FORCE)
endforeach()
set(LLAMA_BUILD_MTMD ON CACHE BOOL "" FORCE)
set(LLAMA_BUILD_IS_DEV OFF CACHE BOOL "" FORCE)

# The CUDA backend (issue 15): off by default, the CPU build unchanged. ./scripts/setup --cuda turns
# it on for the local GPU (or CLEF_CUDA_ARCHITECTURES, e.g. "90" for H100/H200, "80;89;90").
option(CLEF_CUDA "Build ggml's CUDA backend (backbone, vision tower and joint schema head on an NVIDIA GPU)" OFF)
set(CLEF_CUDA_ARCHITECTURES "native" CACHE STRING "CUDA architectures for CLEF_CUDA (native: the local GPU)")
set(GGML_CUDA ${CLEF_CUDA} CACHE BOOL "" FORCE)
if(CLEF_CUDA)
  set(CMAKE_CUDA_ARCHITECTURES "${CLEF_CUDA_ARCHITECTURES}" CACHE STRING "" FORCE)
  # clef keeps flash attention off (docs/performance.md): no FlashAttention kernel instances (most
  # of the CUDA build's time). One GPU per process: no NCCL.
  set(GGML_CUDA_FA OFF CACHE BOOL "" FORCE)
  set(GGML_CUDA_NCCL OFF CACHE BOOL "" FORCE)
endif()

# ggml's AMX path (issue 42): clef compiles it into ggml-cpu wherever the compiler can (x86-64,
# GCC 11+; ggml's AMX code also needs AVX-512 VNNI, which -march=native gives on the CPUs that
# have it) and decides at run time: the AMX buffer type is offered where the CPU has AMX and the
# kernel grants the tile state (ggml_amx_init), and clef's engine parameter cpu_amx can turn it
# off (GGML_CPU_AMX=0, cmake/patches/ggml-cpu-amx-fixes.diff). A binary built so runs on a CPU of the
# same family without AMX on the AVX-512 path. The pinned tree crashed here on GCC 12 (a tile
# config filled on the stack, issue 19): the patch ggml-cpu-amx-fixes.diff makes it a constant.
# GGML_NATIVE ignores ggml's GGML_AMX_* options, so the flags go on the target directly.
foreach(opt GGML_AMX_TILE GGML_AMX_INT8 GGML_AMX_BF16)
  set(${opt} OFF CACHE BOOL "" FORCE)
endforeach()

add_subdirectory("${CLEF_LLAMA_DIR}" "${CMAKE_BINARY_DIR}/llama.cpp" EXCLUDE_FROM_ALL SYSTEM)

# The prebuilt backend modules NEED "libggml-base.so", unversioned (their build's soname): the
# dynamic loader matches that name against the sonames already loaded, so clef's ggml-base carries
# exactly that soname (ggml's own CMake would make it libggml-base.so.0, and the module would then
# load the copy beside it). device_test checks that one copy is mapped.
set_property(TARGET ggml-base PROPERTY VERSION)
set_property(TARGET ggml-base PROPERTY SOVERSION)

include(CheckCXXCompilerFlag)
check_cxx_compiler_flag("-mamx-tile -mamx-int8" CLEF_COMPILER_HAS_AMX)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CLEF_COMPILER_HAS_AMX AND
   CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # Appended after ggml's own -march flags. GNU only: clang 14 spells the macro __AMXINT8__, which
  # ggml's AMX sources do not test for.
  target_compile_options(ggml-cpu PRIVATE -mamx-tile -mamx-int8)
endif()

# llama-ext.h (llama_set_embeddings_nextn and friends) is an uninstalled, C++-linkage staging
# header of the pinned tree: only the backbone module includes it, through this target.
add_library(clef_llama_ext INTERFACE)
target_include_directories(clef_llama_ext SYSTEM INTERFACE "${CLEF_LLAMA_DIR}/src")
target_link_libraries(clef_llama_ext INTERFACE llama)
