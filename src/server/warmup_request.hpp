#pragma once
// The request the runtime thread decides once after loading, before /health says ok: it touches
// every stage (tokenizer, backbone prefill, joint schema head) so the first real request does
// not pay for lazy initialization.

#include "json/value.hpp"

namespace clef::server {

/// {"state": "warm-up", "questions": {"ready": {"type": "noul"}}} (`model` left to its default).
json::Value warmup_request();

}  // namespace clef::server
