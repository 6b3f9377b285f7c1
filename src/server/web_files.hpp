#pragma once
// The files the server serves from the binary itself (web/, embedded at build time by
// cmake/embed_web.cmake): GET /openapi.json, and the playground at GET / and /playground/*.

#include <span>
#include <string_view>

namespace clef::server {

/// One embedded file.
struct WebFile {
  std::string_view path;          ///< request path: "/openapi.json", "/", "/playground/app.js"
  std::string_view content_type;  ///< e.g. "text/html; charset=utf-8"
  std::string_view body;
  bool playground = false;  ///< part of the playground (off with --no-playground)
};

/// Every embedded file.
std::span<const WebFile> web_files() noexcept;

/// The embedded file served at exactly `path`, or null.
const WebFile* find_web_file(std::string_view path) noexcept;

}  // namespace clef::server
