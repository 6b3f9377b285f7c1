// POST /v1/systemone and POST /v1/decisions: read the body within limits, parse it, queue it for
// the runtime thread, wait for the outcome, answer. The HTTP thread never runs the model.

#include "json/parse.hpp"
#include "server/connection_probe.hpp"
#include "server/server_core.hpp"

namespace clef::server {

namespace {

constexpr const char* kJson = "application/json";

}  // namespace

bool ServerCore::read_body(const httplib::Request&, httplib::Response& res,
                           const httplib::ContentReader& reader, std::string& body) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config_.body_timeout_s);
  bool too_large = false;
  bool too_slow = false;
  bool complete = reader([&](const char* data, std::size_t size) {
    if (body.size() + size > config_.max_body_bytes) {
      too_large = true;
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      too_slow = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (complete && !too_large && !too_slow) return true;
  if (too_large || res.status == 413) {
    send(res, ErrorReply::from(Error(ErrorKind::payload_too_large, "request_too_large",
                                     "request body is over the limit of " +
                                         std::to_string(config_.max_body_bytes) + " bytes")));
  } else if (too_slow || (connections_.current() && connections_.current()->timed_out)) {
    send(res, ErrorReply::for_status(408));
  } else {
    send(res, ErrorReply::from(invalid_request(
                  "the request body could not be read (connection closed or timed out)")));
  }
  res.set_header("Connection", "close");
  return false;
}

void ServerCore::handle_decision(const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) {
  RequestContext* context = contexts_.current();
  std::string body;
  if (!read_body(req, res, reader, body)) return;

  json::Value request;
  try {
    request = json::parse(body, json::ParseLimits{config_.max_body_bytes, config_.max_json_depth});
    if (!request.is_object()) {
      throw invalid_request(std::string("the request body must be a JSON object, got ") +
                            request.type_name());
    }
    const json::Value* model = request.find("model");
    if (model == nullptr || model->is_null()) {
      auto info = queue_.model();
      request.set("model", json::Value::string(info ? info->name : "clef-flash"));
    } else if (!model->is_string()) {
      throw invalid_request(std::string("model must be a string, got ") + model->type_name(),
                            "model");
    }
  } catch (const Error& e) {
    send(res, ErrorReply::from(e));
    return;
  }

  std::future<DecisionOutcome> pending;
  try {
    ConnectionEndpoints endpoints{req.local_addr, req.local_port, req.remote_addr, req.remote_port};
    // The socket is looked up once, then only polled: it stays open while this thread waits.
    pending = queue_.submit(std::move(request), [endpoints, fd = -1]() mutable {
      if (fd < 0) fd = find_connection_socket(endpoints);
      return peer_closed(fd);
    });
  } catch (const Error& e) {
    send(res, queue_refusal(e));
    return;
  }

  DecisionOutcome outcome = pending.get();
  if (context) {
    context->queue_wait_ms = outcome.queue_wait_ms;
    if (outcome.status != DecisionOutcome::Status::dropped) {
      context->decision_ms = outcome.decision_ms;
    }
  }
  switch (outcome.status) {
    case DecisionOutcome::Status::decided:
      if (context) context->input_tokens = outcome.decision.input_tokens;
      metrics_.observe_decision(outcome.decision_ms / 1000.0, outcome.queue_wait_ms / 1000.0,
                                outcome.decision.input_tokens);
      res.status = 200;
      res.set_content(outcome.decision.body, kJson);
      return;
    case DecisionOutcome::Status::cancelled:
      log_.event("info",
                 "client gone: decision cancelled after " +
                     std::to_string(static_cast<long>(outcome.decision_ms)) + " ms",
                 context ? context->id : "-");
      [[fallthrough]];
    case DecisionOutcome::Status::dropped:
      // Nobody reads this answer; 499 (client closed request) marks it in the log and metrics.
      metrics_.count_dropped();
      res.status = 499;
      res.set_content(ErrorReply{499, "invalid_request_error", "client_closed_request",
                                 "the client closed the connection before its turn", ""}
                          .body(),
                      kJson);
      res.set_header("Connection", "close");
      return;
    case DecisionOutcome::Status::failed:
      break;
  }
  try {
    std::rethrow_exception(outcome.error);
  } catch (const Error& e) {
    if (e.status() >= 500)
      log_.event("error", std::string("decision failed: ") + e.what(), context ? context->id : "-");
    send(res, e.status() >= 500 ? ErrorReply::internal(context ? context->id : "-")
                                : ErrorReply::from(e));
  } catch (const std::exception& e) {
    log_.event("error", std::string("decision failed: ") + e.what(), context ? context->id : "-");
    send(res, ErrorReply::internal(context ? context->id : "-"));
  } catch (...) {
    log_.event("error", "decision failed: unknown exception", context ? context->id : "-");
    send(res, ErrorReply::internal(context ? context->id : "-"));
  }
}

}  // namespace clef::server
