// ServerCore's decision endpoints (declared in server_core.hpp), POST /v1/systemone and POST
// /v1/decisions: read the body within limits, parse it, prepare it (validate, default, encode,
// decode images: Preparer::prepare on this HTTP thread), queue the prepared request for the runtime
// thread, wait for the outcome, answer. A request that cannot
// be decided is refused here, without waiting behind running decisions.

#include "json/parse.hpp"
#include "server/server_core.hpp"

namespace clef::server {

namespace {
/// How often a thread waiting for its decision looks whether its client is still connected.
constexpr std::chrono::milliseconds kConnectionWatch{20};
}  // namespace

std::optional<HttpResponse> ServerCore::read_body(const HttpRequest& req, const RequestState& state,
                                                  std::string& body,
                                                  util::MemoryBudget::Lease& memory) const {
  bool too_large = false;
  std::optional<Error> over_budget;
  // The body deadline is the connection's (ConnectionTimeouts::body_s): a read past it
  // fails, like a read from a client that went away.
  const BodyRead read = !req.read_body ? BodyRead::incomplete
                                       : req.read_body([&](const char* data, std::size_t size) {
                                           if (body.size() + size > config_.max_body_bytes) {
                                             too_large = true;
                                             return false;
                                           }
                                           try {
                                             memory.charge(size);
                                           } catch (const Error& e) {
                                             over_budget = e;
                                             return false;
                                           }
                                           body.append(data, size);
                                           return true;
                                         });
  if (read == BodyRead::too_large) too_large = true;
  const bool complete = read == BodyRead::complete;
  if (complete && !too_large && !over_budget) return std::nullopt;
  HttpResponse res;
  if (over_budget) {
    ErrorReply reply = ErrorReply::from(*over_budget);
    if (over_budget->kind() == ErrorKind::overloaded) reply.status = config_.overload_status;
    res = answer(reply);
  } else if (too_large) {
    res = answer(ErrorReply::from(Error(ErrorKind::payload_too_large, "request_too_large",
                                        "request body is over the limit of " +
                                            std::to_string(config_.max_body_bytes) +
                                            " bytes (--max-body)")));
  } else if (std::chrono::steady_clock::now() - state.start >=
             std::chrono::seconds(config_.timeouts.body_s) - std::chrono::milliseconds(50)) {
    // The body deadline passed (it runs from the end of the headers, a moment before `start`).
    res = answer(ErrorReply::for_status(408));
  } else {
    res = answer(ErrorReply::from(
        invalid_request("the request body could not be read (malformed chunked framing, the "
                        "connection closed, or a read timed out)")));
  }
  res.set_header("Connection", "close");
  return res;
}

HttpResponse ServerCore::handle_decision(const HttpRequest& req, RequestState& state) {
  // From the body's first byte to the end of its preparation, what the request holds is charged
  // here: past the per-request limit a 413, past what all requests may hold a 429.
  std::unique_ptr<util::MemoryBudget::Lease> memory = prepare_memory_.lease();
  std::string body;
  if (auto refused = read_body(req, state, body, *memory)) return *refused;

  std::future<runtime::DecisionOutcome> pending;
  runtime::Cancellation gone;  // set when the client goes; the decision loop stops it then
  try {
    json::ParseLimits limits{body.size(), config_.max_json_depth, memory->as_charge()};
    json::Value request = json::parse(body, limits);
    memory->release(body.size());
    std::string().swap(body);  // the parsed JSON is all that is needed now
    // While the request is prepared (a video is read) on this thread, the preparation asks the
    // connection itself; from then on the runtime reads only the flag `gone`, which this thread
    // sets when it sees the client leave (below).
    const runtime::Cancellation preparing =
        req.connection_closed ? runtime::Cancellation::polling(req.connection_closed) : gone;
    runtime::PreparedRequest prepared =
        queue_.prepare(std::move(request), preparing, memory->as_charge());
    state.truncated_tokens = static_cast<int>(prepared.record.state_tokens_cut);
    state.ignored_fields = prepared.request.ignored_fields;
    prepared.cancellation = gone;
    pending = queue_.submit(std::move(prepared));
    memory.reset();  // prepared: what it holds now is the record's ids (and images' pixels)
  } catch (const DecisionCancelled& e) {
    // The client left while its request was prepared (a video being read): 499, as a dropped one.
    log_.event("info", std::string("client gone: preparation stopped: ") + e.what(), state.id);
    metrics_.count_dropped();
    HttpResponse res = answer(ErrorReply{499, "invalid_request_error", "client_closed_request",
                                         "the client closed the connection while its request "
                                         "was prepared",
                                         ""});
    res.set_header("Connection", "close");
    return res;
  } catch (const Error& e) {
    ErrorReply reply = ErrorReply::from(e);
    if (e.kind() == ErrorKind::overloaded) reply.status = config_.overload_status;
    // A field the contract refuses in well-formed JSON (not invalid_json): --validation-status.
    if (e.code() == "invalid_request" && reply.status == 400) {
      reply.status = config_.validation_status;
    }
    if (e.status() >= 500 && e.kind() != ErrorKind::unavailable) {
      log_.event("error", std::string("request preparation failed: ") + e.what(), state.id);
      reply = ErrorReply::internal(state.id);
    }
    return answer(reply);
  }

  // Waiting for the outcome, this thread watches the connection: the runtime never touches a
  // socket, it stops the decision at its next step (or, inside a long piece, through llama.cpp's
  // abort callback reading the flag).
  while (pending.wait_for(kConnectionWatch) != std::future_status::ready) {
    if (req.connection_closed && !gone.requested() && req.connection_closed()) {
      gone.cancel();
      queue_.withdraw_cancelled();  // still waiting: its place is free at once
    }
  }
  runtime::DecisionOutcome outcome = pending.get();
  return outcome_answer(outcome, state);
}

HttpResponse ServerCore::outcome_answer(runtime::DecisionOutcome& outcome, RequestState& state) {
  state.queue_wait_ms = outcome.queue_wait_ms;
  if (outcome.status != runtime::DecisionOutcome::Status::dropped)
    state.decision_ms = outcome.decision_ms;
  HttpResponse res;
  switch (outcome.status) {
    case runtime::DecisionOutcome::Status::decided:
      state.input_tokens = outcome.decision.input_tokens;
      state.cached_tokens = outcome.decision.cached_tokens;
      metrics_.observe_decision(outcome.decision_ms / 1000.0, outcome.queue_wait_ms / 1000.0,
                                outcome.decision.input_tokens, state.key_name);
      metrics_.count_cuts(state.truncated_tokens, state.ignored_fields.size());
      res.body = std::move(outcome.decision.body);
      // The body is the reference's to the byte; what the state cache saved, how much of the
      // state was cut to fit, and what the request carried that the contract ignores, are said
      // in headers.
      res.set_header("X-Clef-Cached-Tokens", std::to_string(outcome.decision.cached_tokens));
      res.set_header("X-Clef-Truncated-Tokens",
                     std::to_string(std::max(state.truncated_tokens, 0)));
      if (!state.ignored_fields.empty()) {
        res.set_header("X-Clef-Ignored-Fields", field_list(state.ignored_fields));
      }
      return res;
    case runtime::DecisionOutcome::Status::cancelled:
      log_.event("info",
                 "client gone: decision cancelled after " +
                     std::to_string(static_cast<long>(outcome.decision_ms)) + " ms",
                 state.id);
      [[fallthrough]];
    case runtime::DecisionOutcome::Status::dropped:
      // Nobody reads this answer; 499 (client closed request) marks it in the log and metrics.
      metrics_.count_dropped();
      res = answer(ErrorReply{499, "invalid_request_error", "client_closed_request",
                              "the client closed the connection before its turn", ""});
      res.set_header("Connection", "close");
      return res;
    case runtime::DecisionOutcome::Status::failed:
      break;
  }
  try {
    std::rethrow_exception(outcome.error);
  } catch (const Error& e) {
    if (e.status() >= 500) {
      log_.event("error", std::string("decision failed: ") + e.what(), state.id);
      return answer(ErrorReply::internal(state.id));
    }
    return answer(ErrorReply::from(e));
  } catch (const std::exception& e) {
    log_.event("error", std::string("decision failed: ") + e.what(), state.id);
  } catch (...) {
    log_.event("error", "decision failed: unknown exception", state.id);
  }
  return answer(ErrorReply::internal(state.id));
}

}  // namespace clef::server
