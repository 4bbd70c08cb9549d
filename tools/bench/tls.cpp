// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), OpenSSL (Debian libssl-dev)
#include "tls.hpp"

#include <algorithm>
#include <stdexcept>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "client.hpp"  // read_timed

namespace tokchron_bench {

namespace net = boost::asio;

namespace {
// The slot of an SSL_CTX's extra data that points to its tls_client (Asio keeps its own
// verification callback in the context's app data, so that one is not ours to use).
int client_slot() {
  static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}
}  // namespace

tls_client::tls_client(const tls_options& o)
    : ctx_(net::ssl::context::tls_client), verify_(o.verify) {
  SSL_CTX* c = ctx_.native_handle();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  if (verify_) {
    boost::system::error_code ec;
    if (o.ca_file.empty())
      ctx_.set_default_verify_paths(ec);
    else
      ctx_.load_verify_file(o.ca_file, ec);
    if (ec)
      throw std::invalid_argument((o.ca_file.empty() ? std::string("the system's certificate store")
                                                     : "--ca-cert '" + o.ca_file + "'") +
                                  ": cannot be loaded: " + ec.message());
    ctx_.set_verify_mode(net::ssl::verify_peer);
  } else {
    ctx_.set_verify_mode(net::ssl::verify_none);
  }
  // Resumption: the client keeps the server's latest session (a TLS 1.3 ticket comes after
  // the handshake, in the connection's first read, so it is taken from the callback, not from
  // a finished handshake).
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_set_ex_data(c, client_slot(), this);
  SSL_CTX_sess_set_new_cb(c, &tls_client::on_new_session);
}

tls_client::~tls_client() {
  if (latest_) SSL_SESSION_free(latest_);
}

// The client keeps a copy of the session, and gives each connection a copy of its own: OpenSSL
// marks a connection's session not resumable when the connection is freed without having sent
// close_notify (SSL_free's ssl_clear_bad_session), as the client frees every connection it is
// done with. The session object a connection holds is the one it got its ticket into, or the
// one it resumed: were it the kept one, the end of any connection that made or used it would
// make the next handshakes full ones, depending on whether they started before that end.
int tls_client::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<tls_client*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), client_slot()));
  if (!self) return 0;
  SSL_SESSION* copy = SSL_SESSION_dup(session);
  if (!copy) return 0;
  std::lock_guard<std::mutex> lock(self->m_);
  if (self->latest_) SSL_SESSION_free(self->latest_);
  self->latest_ = copy;
  return 0;  // the connection keeps its own reference
}

bool tls_client::prepare(SSL* ssl, const std::string& host) {
  std::string name = host;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']')
    name = name.substr(1, name.size() - 2);
  boost::system::error_code ec;
  (void)net::ip::make_address(name, ec);
  const bool address = !ec;  // an IP address: no SNI, checked against the certificate's IPs
  if (!address && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) return false;
  if (verify_) {
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (address ? X509_VERIFY_PARAM_set1_ip_asc(p, name.c_str()) != 1
                : X509_VERIFY_PARAM_set1_host(p, name.c_str(), name.size()) != 1)
      return false;
  }
  SSL_SESSION* copy = nullptr;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (latest_) copy = SSL_SESSION_dup(latest_);
  }
  if (copy) {  // none: nothing to resume yet (or no memory for the copy), a full handshake
    (void)SSL_set_session(ssl, copy);
    SSL_SESSION_free(copy);  // the connection holds its own reference
  }
  return true;
}

std::string tls_client::handshake_error(SSL* ssl, const boost::system::error_code& ec) {
  // A refused certificate says why (OpenSSL's verification result); anything else is the
  // handshake's own error ("wrong version number", "unexpected eof while reading").
  const long v = SSL_get_verify_result(ssl);
  if (v != X509_V_OK)
    return "certificate verify failed: " + std::string(X509_verify_cert_error_string(v));
  return ec.message();
}

boost::system::error_code timed_socket::read_once(void* data, std::size_t size, std::size_t& n) {
  const timed_read r = read_timed(socket_.native_handle(), data, size);
  if (r.bytes < 0) {
    if (r.error == EAGAIN || r.error == EWOULDBLOCK) return net::error::would_block;
    return {r.error, boost::system::system_category()};
  }
  if (r.bytes == 0) return net::error::eof;
  n = static_cast<std::size_t>(r.bytes);
  clock::time_point t = r.read_at;
  last_.stamped = false;
  if (r.kernel_at && kernel_time_) {
    t = std::clamp(*r.kernel_at, floor_, r.read_at);
    last_.stamped = true;
  }
  last_.time = t;
  last_.read_at = r.read_at;
  floor_ = t;
  ++last_.count;
  return {};
}

}  // namespace tokchron_bench
