#include "server/error_reply.hpp"

#include <gtest/gtest.h>

#include "json/parse.hpp"

namespace clef::server {
namespace {

TEST(ErrorReply, BodyHasTheFourFieldsInOrderAndTheMessageAsDetail) {
  ErrorReply reply = ErrorReply::from(invalid_request(
      "questions.urgency.criteria must be a non-empty array", "questions.urgency.criteria"));
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body(),
            R"({"error":{"message":"questions.urgency.criteria must be a non-empty array",)"
            R"("type":"invalid_request_error","code":"invalid_request",)"
            R"("param":"questions.urgency.criteria"},)"
            R"("detail":"questions.urgency.criteria must be a non-empty array"})");
}

TEST(ErrorReply, EmptyParamIsNullAndMessagesAreEscaped) {
  ErrorReply reply{413, "invalid_request_error", "context_length_exceeded", "a \"quoted\"\nline",
                   ""};
  EXPECT_EQ(reply.body(),
            R"({"error":{"message":"a \"quoted\"\nline","type":"invalid_request_error",)"
            R"("code":"context_length_exceeded","param":null},"detail":"a \"quoted\"\nline"})");
}

TEST(ErrorReply, StatusAndTypeFollowTheErrorKind) {
  struct Case {
    ErrorKind kind;
    int status;
    const char* type;
  };
  for (Case c : {Case{ErrorKind::invalid_request, 400, "invalid_request_error"},
                 Case{ErrorKind::payload_too_large, 413, "invalid_request_error"},
                 Case{ErrorKind::unsupported_media_type, 415, "invalid_request_error"},
                 Case{ErrorKind::overloaded, 429, "overloaded_error"},
                 Case{ErrorKind::unavailable, 503, "unavailable_error"},
                 Case{ErrorKind::model_error, 500, "server_error"},
                 Case{ErrorKind::internal, 500, "server_error"}}) {
    ErrorReply reply = ErrorReply::from(Error(c.kind, "c", "m", "p"));
    EXPECT_EQ(reply.status, c.status);
    EXPECT_EQ(reply.type, c.type);
    EXPECT_EQ(reply.code, "c");
    EXPECT_EQ(reply.param, "p");
  }
}

TEST(ErrorReply, ContextLengthExceededIs413WhicheverPartOverflowed) {
  // The record encoder's refusal (schema alone too long) is an invalid_request; the engine's
  // (text or images) a payload_too_large: the server answers both with 413.
  for (ErrorKind kind : {ErrorKind::invalid_request, ErrorKind::payload_too_large}) {
    ErrorReply reply = ErrorReply::from(Error(kind, "context_length_exceeded", "too long"));
    EXPECT_EQ(reply.status, 413);
    EXPECT_EQ(reply.type, "invalid_request_error");
    EXPECT_EQ(reply.code, "context_length_exceeded");
  }
}

// Issue 53, found as a new user: a body over the limit that the HTTP layer refuses (chunked, no
// Content-Length to check first) did not say which flag sets the limit.
TEST(ErrorReply, ABodyTooLargeNamesTheFlagThatSetsTheLimit) {
  const ErrorReply reply = ErrorReply::for_status(413);
  EXPECT_EQ(reply.status, 413);
  EXPECT_EQ(reply.code, "request_too_large");
  EXPECT_NE(reply.message.find("--max-body"), std::string::npos) << reply.message;
}

TEST(ErrorReply, NotFoundMethodNotAllowedAndInternalNameWhatHappened) {
  ErrorReply nf = ErrorReply::not_found("GET", "/v2/nothing");
  EXPECT_EQ(nf.status, 404);
  EXPECT_NE(nf.message.find("/v2/nothing"), std::string::npos);
  ErrorReply na = ErrorReply::method_not_allowed("GET", "/v1/decisions", "POST");
  EXPECT_EQ(na.status, 405);
  EXPECT_EQ(na.code, "method_not_allowed");
  EXPECT_NE(na.message.find("POST"), std::string::npos);
  ErrorReply in = ErrorReply::internal("req-1-2");
  EXPECT_EQ(in.status, 500);
  EXPECT_NE(in.message.find("req-1-2"), std::string::npos);
  // Every body parses as JSON with an "error" object.
  for (const ErrorReply& r : {nf, na, in, ErrorReply::for_status(400), ErrorReply::for_status(413),
                              ErrorReply::for_status(414), ErrorReply::for_status(502)}) {
    json::Value v = json::parse(r.body());
    ASSERT_NE(v.find("error"), nullptr);
    EXPECT_TRUE(v.find("error")->find("message")->is_string());
  }
  EXPECT_EQ(ErrorReply::for_status(413).status, 413);
  EXPECT_EQ(ErrorReply::for_status(502).type, "server_error");
}

}  // namespace
}  // namespace clef::server
