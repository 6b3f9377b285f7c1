# `cmake --install build --prefix P`: a relocatable clef (issue 45). Everything is found relative
# to bin/clef (util/install_layout.hpp), nothing in the build or source tree:
#   bin/clef
#   lib/libllama.so*, libmtmd.so*, libggml*.so*      RUNPATH $ORIGIN (clef: $ORIGIN/../lib)
#   lib/clef/ggml-backends/libggml-vulkan.so         the prebuilt Vulkan backend (when fetched)
#   lib/clef/libclef_video_ffmpeg.so                 video files' decoding (CLEF_VIDEO builds)
#   share/clef/clef-registry.json                    the model registry
#   share/clef/ggml-vocab-qwen35.gguf                make-test-model's and --demo's vocabulary
#   share/clef/oracle/coreai/                        `clef verify`'s default fixture and its images
include(GNUInstallDirs)
set(CLEF_INSTALLED_LIBS llama mtmd ggml ggml-base ggml-cpu)
foreach(backend ggml-cuda)
  if(TARGET ${backend})
    list(APPEND CLEF_INSTALLED_LIBS ${backend})
  endif()
endforeach()
set_target_properties(clef PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
set_target_properties(${CLEF_INSTALLED_LIBS} PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS clef RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The libraries only (their headers are llama.cpp's development files, not clef's).
install(TARGETS ${CLEF_INSTALLED_LIBS} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP
        PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} EXCLUDE_FROM_ALL
        PRIVATE_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/registry/models.json DESTINATION share/clef
        RENAME clef-registry.json)
install(FILES ${CLEF_LLAMA_DIR}/models/ggml-vocab-qwen35.gguf DESTINATION share/clef)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tests/data/oracle/coreai/ DESTINATION share/clef/oracle/coreai)
if(TARGET clef_video_ffmpeg)
  # Found beside bin/ in lib/clef/ (src/video/container.cpp); it links FFmpeg's system libraries.
  install(TARGETS clef_video_ffmpeg LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/clef)
endif()
if(CLEF_HAS_VULKAN_MODULE)
  install(FILES ${CLEF_GGML_BACKENDS_DIR}/libggml-vulkan.so
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/clef/ggml-backends)
endif()
