// HTTPS (`--ssl-cert-file`, `--ssl-key-file`) on 127.0.0.1 with a self-signed pair that `openssl`
// makes here: real handshakes with httplib's SSL client (what `clef batch` uses) and with curl,
// keep-alive and API keys over TLS, a plain-HTTP client answered in plain HTTP (400
// https_required), and every bad file refused at start naming it.

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <sys/stat.h>

#include "json/parse.hpp"
#include "raw_socket.hpp"
#include "server_fixture.hpp"
#include "temp_dir.hpp"

namespace clef::server {
namespace {

using testing::RawSocket;
using testing::ServerFixture;
using testing::TempDir;
using testing::test_config;
using namespace std::chrono_literals;

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
  // Plain HTTP to the HTTPS port is answered in plain HTTP, 400 saying what to do (curl showed
  // "(52) Empty reply from server" before), and does not disturb the server.
  auto plain = f.client()->Get("/health");
  ASSERT_TRUE(plain) << httplib::to_string(plain.error());
  EXPECT_EQ(plain->status, 400);
  EXPECT_NE(plain->body.find("https_required"), std::string::npos) << plain->body;
  EXPECT_NE(plain->body.find("use https://"), std::string::npos) << plain->body;
  const std::string shown =
      shell("curl -s --max-time 10 http://127.0.0.1:" + std::to_string(f.port) +
            "/v1/models; echo \" exit=$?\"");
  EXPECT_NE(shown.find("this port speaks HTTPS"), std::string::npos) << shown;
  EXPECT_NE(shown.find("exit=0"), std::string::npos) << shown;
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

/// Sends `bytes` one at a time, `gap` apart, until they are sent or `stop` is set.
void drip(RawSocket& socket, const std::string& bytes, std::chrono::milliseconds gap,
          const std::atomic<bool>& stop) {
  for (char byte : bytes) {
    if (stop || !socket.send_all(std::string(1, byte))) return;
    std::this_thread::sleep_for(gap);
  }
}

/// Waits until the server closes `socket` (or `limit` passes); the time it took.
std::chrono::milliseconds time_to_close(RawSocket& socket, std::chrono::milliseconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  socket.read_all(limit);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0);
}

/// HTTPS with one general worker and a 2 s header timeout (each read may wait 5 s).
ServerConfig slow_client_config(const CertPair& pair) {
  ServerConfig config = tls_config(pair);
  config.http_threads = 1;
  config.timeouts.header_s = 2;
  config.timeouts.read_s = 5;
  return config;
}

/// Slowloris over TLS: a ClientHello sent a byte every 200 ms is cut off at the header timeout,
/// and meanwhile the one general worker still serves a decision (the handshake waits on the
/// poller, not on a worker; it used to hold one with no overall deadline).
TEST(ServerTls, ADrippedHandshakeIsCutOffAndHoldsNoWorker) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  ServerFixture f(slow_client_config(pair));
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::unique_ptr<RawSocket>> slow;
  std::vector<std::thread> drippers;
  std::atomic<bool> stop{false};
  // A TLS 1.2 record header and the start of a ClientHello.
  const std::string hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + std::string(40, 'r'));
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<RawSocket>(f.port));
    drippers.emplace_back([&, socket = slow.back().get()] { drip(*socket, hello, 200ms, stop); });
  }
  auto c = tls_client(f, pair);
  c->set_read_timeout(2, 0);
  auto res = c->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  for (auto& socket : slow) EXPECT_LT(time_to_close(*socket, 6s), 4s);
  stop = true;
  for (auto& t : drippers) t.join();
}

/// After the handshake, a request sent as one TLS record a byte every 200 ms: the connection is
/// closed once the header timeout passes (the record never completes), holding no worker.
TEST(ServerTls, ARequestRecordDrippedAfterTheHandshakeIsCutOff) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  ServerFixture f(slow_client_config(pair));
  ASSERT_TRUE(f.wait_ready());

  RawSocket socket(f.port);
  ASSERT_TRUE(socket.valid());
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  ASSERT_EQ(SSL_set_fd(ssl.get(), socket.fd()), 1);
  ASSERT_EQ(SSL_connect(ssl.get()), 1);
  // The request's record is made in memory, then sent a byte at a time.
  BIO* memory = BIO_new(BIO_s_mem());
  SSL_set0_wbio(ssl.get(), memory);  // the SSL owns it
  const std::string request = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())),
            static_cast<int>(request.size()));
  std::string record(static_cast<std::size_t>(BIO_pending(memory)), '\0');
  ASSERT_EQ(BIO_read(memory, record.data(), static_cast<int>(record.size())),
            static_cast<int>(record.size()));
  std::atomic<bool> stop{false};
  std::thread dripper([&] { drip(socket, record, 200ms, stop); });

  auto c = tls_client(f, pair);
  c->set_read_timeout(2, 0);
  auto res = c->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(time_to_close(socket, 8s), 4s);
  stop = true;
  dripper.join();
}

/// An encrypted key is refused at start naming the file; OpenSSL never asks for a passphrase on
/// the terminal (it did, with the signals that could stop it blocked).
TEST(ServerTls, AnEncryptedKeyIsRefusedWithoutAPassphrasePrompt) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  const std::string encrypted = (dir.path() / "encrypted.key").string();
  ASSERT_EQ(std::system(("openssl pkey -in '" + pair.key + "' -aes256 -passout pass:secret -out '" +
                         encrypted + "' 2>/dev/null")
                            .c_str()),
            0);
  ServerConfig config = tls_config(pair);
  config.ssl_key_file = encrypted;
  std::string param;
  const std::string error = start_error(config, param);
  EXPECT_NE(error.find("encrypted.key: is not a PEM private key without a passphrase"),
            std::string::npos)
      << error;
  EXPECT_EQ(param, "ssl-key-file");

  ServerConfig directory = tls_config(pair);
  directory.ssl_cert_file = dir.path().string();
  EXPECT_NE(start_error(directory, param).find("is a directory, not a PEM file"),
            std::string::npos);
  EXPECT_EQ(param, "ssl-cert-file");
}

/// The suite `openssl s_client` agrees on with the server over TLS 1.2 when it offers only
/// `cipher` ("(NONE)" when the handshake fails).
std::string tls12_suite(int port, const std::string& cipher) {
  const std::string out = shell("openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                                " -tls1_2 -cipher '" + cipher + "' </dev/null 2>&1");
  const std::size_t at = out.find("Cipher is ");
  if (at == std::string::npos) return "(NONE)";
  return out.substr(at + 10, out.find('\n', at) - at - 10);
}

/// Reported (issue 52, item 6): TLS 1.2 offered suites without forward secrecy (AES256-GCM-SHA384,
/// AES128-GCM-SHA256, AES256-SHA256, AES128-SHA256) and CBC suites. By default only ECDHE with
/// AEAD is agreed; --ssl-ciphers widens it; a list OpenSSL matches nothing of is refused at start.
TEST(ServerTls, Tls12OffersOnlyForwardSecretAeadSuitesByDefault) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  ServerFixture f(tls_config(pair));
  ASSERT_TRUE(f.wait_ready());
  for (const char* weak : {"AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA256",
                           "AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-RSA-AES256-SHA"}) {
    EXPECT_EQ(tls12_suite(f.port, weak), "(NONE)") << weak;
  }
  EXPECT_EQ(tls12_suite(f.port, "ECDHE-RSA-AES128-GCM-SHA256"), "ECDHE-RSA-AES128-GCM-SHA256");
  EXPECT_EQ(tls12_suite(f.port, "ECDHE-RSA-CHACHA20-POLY1305"), "ECDHE-RSA-CHACHA20-POLY1305");

  ServerConfig wide = tls_config(pair);
  wide.ssl_ciphers = "ECDHE+AESGCM:AES256-GCM-SHA384";
  ServerFixture widened(wide);
  ASSERT_TRUE(widened.wait_ready());
  EXPECT_EQ(tls12_suite(widened.port, "AES256-GCM-SHA384"), "AES256-GCM-SHA384");

  ServerConfig bad = tls_config(pair);
  bad.ssl_ciphers = "NO-SUCH-SUITE";
  std::string param;
  EXPECT_NE(start_error(bad, param).find("names no TLS 1.2 cipher suite"), std::string::npos);
  EXPECT_EQ(param, "ssl-ciphers");
}

/// Reported (issue 52, item 6): a key file readable by others started without a warning.
TEST(ServerTls, SecretFilesOthersMayReadAreWarnedAbout) {
  TempDir dir;
  CertPair pair(dir);
  ASSERT_TRUE(pair.ok);
  const std::string keys = (dir.path() / "keys.txt").string();
  std::ofstream(keys) << "ops sk-1\n";
  ServerConfig config = tls_config(pair);
  config.api_key_file = keys;
  ASSERT_EQ(::chmod(keys.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(pair.key.c_str(), 0600), 0);
  EXPECT_TRUE(secret_file_warnings(config).empty());
  ASSERT_EQ(::chmod(keys.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(pair.key.c_str(), 0640), 0);
  const std::vector<std::string> warnings = secret_file_warnings(config);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("--api-key-file " + keys + " has mode 0644"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("--ssl-key-file " + pair.key + " has mode 0640"), std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[1].find("chmod 600"), std::string::npos);
}

}  // namespace
}  // namespace clef::server
