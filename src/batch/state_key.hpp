#pragma once
// X-Clef-State-Key: what `clef batch` sends so that a balancer (deploy/haproxy) routes every
// request about one state to the same replica, whose state cache holds it.

#include <string>

#include "json/value.hpp"

namespace clef::batch {

/// The first 32 hex digits of SHA-256(render(state) + "\n" + each image, "\n"-separated), where
/// render is the contract's (a string as is, anything else as CPython's sorted compact
/// json.dumps); "" when the request has no state. Two requests with the same state and images get
/// the same key, whatever their questions. Any client may compute it the same way (docs).
std::string state_key(const json::Value& request);

}  // namespace clef::batch
