// HTTPS (`--ssl-cert-file`, `--ssl-key-file`) on 127.0.0.1 with a self-signed pair that `openssl`
// makes here: real handshakes with httplib's SSL client (what `clef batch` uses) and with curl,
// keep-alive and API keys over TLS, a plain-HTTP client refused, and every bad file refused at
// start naming it.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "json/parse.hpp"
#include "server_fixture.hpp"
#include "temp_dir.hpp"

namespace clef::server {
namespace {

using testing::ServerFixture;
using testing::TempDir;
using testing::test_config;

const char* kCard = R"({"state":"Production database is down",)"
                    R"("questions":{"outage":{"type":"noul"}}})";

/// Runs `command` in a shell; its stdout.
std::string shell(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    ::pclose(pipe);
  }
  return out;
}

/// A self-signed certificate for 127.0.0.1 / localhost and its key, made by the openssl tool.
struct CertPair {
  explicit CertPair(const TempDir& dir, const std::string& name = "server") {
    cert = (dir.path() / (name + ".crt")).string();
    key = (dir.path() / (name + ".key")).string();
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=clef-test"
        " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout '" +
        key + "' -out '" + cert + "' 2>/dev/null";
    ok = std::system(cmd.c_str()) == 0;
  }
  std::string cert, key;
  bool ok = false;
};

ServerConfig tls_config(const CertPair& pair) {
  ServerConfig config = test_config();
  config.ssl_cert_file = pair.cert;
  config.ssl_key_file = pair.key;
  return config;
}

std::unique_ptr<httplib::SSLClient> tls_client(const ServerFixture& f, const CertPair& pair) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", f.port);
  c->set_ca_cert_path(pair.cert.c_str());
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(10, 0);
  return c;
}

TEST(ServerTls, DecisionsOverHttpsWithAVerifiedCertificate) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok) << "openssl could not make a test certificate";
  ServerFixture f(tls_config(pair));
  ASSERT_TRUE(f.wait_ready());
  auto c = tls_client(f, pair);
  auto health = c->Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  // Several requests on one TLS connection (keep-alive), then the same bytes as plain HTTP gives.
  std::string first;
  for (int i = 0; i < 3; ++i) {
    auto decided = c->Post("/v1/decisions", kCard, "application/json");
    ASSERT_TRUE(decided) << httplib::to_string(decided.error());
    ASSERT_EQ(decided->status, 200) << decided->body;
    if (i == 0) first = decided->body;
    EXPECT_EQ(decided->body, first);
  }
  ServerFixture plain;
  ASSERT_TRUE(plain.wait_ready());
  auto reference = plain.client()->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(reference);
  EXPECT_EQ(reference->body, first);
  auto bad = c->Post("/v1/decisions", "{", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("invalid_json"), std::string::npos);
  // A large body crosses many TLS records.
  const std::string big =
      R"({"state":")" + std::string(3000, 'x') + R"(","questions":{"q":{"type":"noul"}}})";
  auto large = c->Post("/v1/decisions", big, "application/json");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 200) << large->body;
}

TEST(ServerTls, CurlVerifiesTheCertificateAndApiKeysWorkOverTls) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  ServerConfig config = tls_config(pair);
  config.api_keys = {"sk-tls-test"};
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  const std::string url = "https://127.0.0.1:" + std::to_string(f.port);
  const std::string curl =
      "curl -s --max-time 10 --cacert '" + pair.cert + "' -o /dev/null -w '%{http_code}' ";
  EXPECT_EQ(shell(curl + url + "/health"), "200");
  EXPECT_EQ(shell(curl + url + "/v1/models"), "401");
  EXPECT_EQ(shell(curl + "-H 'Authorization: Bearer sk-tls-test' " + url + "/v1/models"), "200");
  EXPECT_EQ(shell(curl + "-H 'X-API-Key: sk-tls-test' -H 'Content-Type: application/json' -d '" +
                  std::string(kCard) + "' " + url + "/v1/decisions"),
            "200");
  // Without the CA, curl refuses the self-signed certificate (exit 60, no status).
  EXPECT_EQ(shell("curl -s --max-time 10 -o /dev/null -w '%{http_code}' " + url + "/health"),
            "000");
  // Plain HTTP to the HTTPS port gets no answer and does not disturb the server.
  auto plain = f.client()->Get("/health");
  EXPECT_FALSE(plain && plain->status == 200);
  EXPECT_EQ(shell(curl + url + "/health"), "200");
}

/// The message of the clef::Error the server's construction throws for `config` ("" if none).
std::string start_error(const ServerConfig& config, std::string& param) {
  try {
    ServerFixture f(config);
  } catch (const Error& e) {
    param = e.param();
    return e.what();
  }
  return "";
}

TEST(ServerTls, BadCertificateOrKeyFilesAreRefusedAtStartNamingTheFile) {
  TempDir dir;
  CertPair pair(dir);
  CertPair other(dir, "other");
  ASSERT_TRUE(pair.ok && other.ok);
  const std::string garbage = (dir.path() / "garbage.pem").string();
  std::ofstream(garbage) << "not a certificate\n";
  std::string param;

  ServerConfig missing = tls_config(pair);
  missing.ssl_cert_file = (dir.path() / "nope.crt").string();
  EXPECT_NE(start_error(missing, param).find("nope.crt: cannot be read"), std::string::npos);
  EXPECT_EQ(param, "ssl-cert-file");

  ServerConfig not_cert = tls_config(pair);
  not_cert.ssl_cert_file = garbage;
  EXPECT_NE(start_error(not_cert, param).find("garbage.pem: is not a PEM certificate"),
            std::string::npos);
  EXPECT_EQ(param, "ssl-cert-file");

  ServerConfig not_key = tls_config(pair);
  not_key.ssl_key_file = garbage;
  EXPECT_NE(start_error(not_key, param).find("garbage.pem: is not a PEM private key"),
            std::string::npos);
  EXPECT_EQ(param, "ssl-key-file");

  ServerConfig mismatch = tls_config(pair);
  mismatch.ssl_key_file = other.key;
  const std::string mismatch_error = start_error(mismatch, param);
  EXPECT_NE(mismatch_error.find("other.key: is not the private key of the certificate"),
            std::string::npos)
      << mismatch_error;
  EXPECT_EQ(param, "ssl-key-file");

  ServerConfig half = test_config();
  half.ssl_cert_file = pair.cert;
  EXPECT_NE(start_error(half, param).find("--ssl-cert-file and --ssl-key-file together"),
            std::string::npos);
  EXPECT_EQ(param, "ssl-key-file");
}

}  // namespace
}  // namespace clef::server
