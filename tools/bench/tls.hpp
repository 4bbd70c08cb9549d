// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), OpenSSL (Debian libssl-dev)
#ifndef TOKCHRON_TOOLS_BENCH_TLS_HPP
#define TOKCHRON_TOOLS_BENCH_TLS_HPP

/// \file
/// tokchron-bench's TLS: the client context of a run (`tls_client`: certificate verification
/// against the system's trust store, a CA file, or none; the latest session kept for
/// resumption), and `timed_socket`, the TCP layer under Asio's `ssl::stream` whose reads of the
/// ciphertext are timed as the plain client times its reads (`read_timed`: the kernel's receive
/// stamp, or the read's time), so that the bytes a TLS record decrypts to carry the time of the
/// socket read that completed the record.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "client.hpp"  // clock, tls_options

namespace tokchron_bench {

/// The TLS client context of one run, shared by its I/O threads: TLS 1.2 or later, the peer's
/// chain verified against the trust store (`tls_options`) and its name against the URL's host
/// (a DNS name against the certificate's names, an IP address against its IP addresses), and
/// a copy of the latest session ticket any connection received kept, so that every connection
/// opened after it offers it (an abbreviated handshake where the server takes it). Throws
/// `std::invalid_argument` naming the CA file when it cannot be read.
class tls_client {
 public:
  explicit tls_client(const tls_options& o);
  ~tls_client();
  tls_client(const tls_client&) = delete;
  tls_client& operator=(const tls_client&) = delete;

  [[nodiscard]] boost::asio::ssl::context& context() noexcept { return ctx_; }
  [[nodiscard]] bool verifies() const noexcept { return verify_; }
  /// Prepares a new connection's SSL object to reach `host`: server name indication (not for
  /// an IP address, which RFC 6066 leaves out of it), the name the certificate must carry, and
  /// a copy of the session to resume when a connection received one. False when OpenSSL
  /// refused the name.
  bool prepare(SSL* ssl, const std::string& host);
  /// Why a handshake on `ssl` failed: `ec`'s message, with the certificate check's own reason
  /// when verification failed ("certificate verify failed: self-signed certificate").
  [[nodiscard]] static std::string handshake_error(SSL* ssl, const boost::system::error_code& ec);

 private:
  static int on_new_session(SSL* ssl, SSL_SESSION* session);

  boost::asio::ssl::context ctx_;
  bool verify_ = true;
  std::mutex m_;
  SSL_SESSION* latest_ = nullptr;  // owned
};

/// A TCP socket as the next layer of `boost::asio::ssl::stream`: writes go to the socket;
/// each read waits until the socket is readable and reads it with `read_timed`, keeping the
/// read's time (`last_time`: the kernel's stamp held between the stream's previous time and the
/// read's time, or the read's time) and counting the reads. Single-threaded, as its
/// io_context.
class timed_socket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using lowest_layer_type = boost::asio::ip::tcp::socket::lowest_layer_type;

  timed_socket(boost::asio::ip::tcp::socket s, bool kernel_time)
      : socket_(std::move(s)), kernel_time_(kernel_time) {}

  [[nodiscard]] executor_type get_executor() noexcept { return socket_.get_executor(); }
  [[nodiscard]] lowest_layer_type& lowest_layer() noexcept { return socket_.lowest_layer(); }
  [[nodiscard]] const lowest_layer_type& lowest_layer() const noexcept {
    return socket_.lowest_layer();
  }
  [[nodiscard]] boost::asio::ip::tcp::socket& socket() noexcept { return socket_; }

  template <class ConstBufferSequence, class WriteHandler>
  auto async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
    return socket_.async_write_some(buffers, std::forward<WriteHandler>(handler));
  }

  /// A read of an empty buffer completes at once, posted, with no error and no byte, as a
  /// socket's does: the SSL stream issues one to run its handler "as if posted" when a read is
  /// served from records it has already decrypted, and it must neither wait for the socket
  /// nor read it (a read of 0 bytes would look like the peer's close).
  template <class MutableBufferSequence, class ReadHandler>
  auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    return boost::asio::async_initiate<ReadHandler, void(boost::system::error_code, std::size_t)>(
        [this](auto h, const MutableBufferSequence& b) {
          if (boost::asio::buffer_size(b) == 0)
            return boost::asio::post(
                socket_.get_executor(),
                boost::beast::bind_front_handler(std::move(h), boost::system::error_code{},
                                                 std::size_t{0}));
          this->wait_then_read(std::move(h), b);
        },
        handler, buffers);
  }

  /// The latest read that returned bytes: its time, whether the kernel stamped it, how long
  /// its bytes waited in the kernel; and the number of such reads so far.
  struct read_info {
    clock::time_point time{}, read_at{};
    bool stamped = false;
    std::uint64_t count = 0;
  };
  [[nodiscard]] const read_info& last() const noexcept { return last_; }
  /// The earliest time the next read may get (the stream's previous time).
  void floor(clock::time_point t) noexcept { floor_ = t; }

 private:
  template <class Handler, class MutableBufferSequence>
  void wait_then_read(Handler h, const MutableBufferSequence& b) {
    socket_.async_wait(boost::asio::ip::tcp::socket::wait_read,
                       [this, h = std::move(h), b](const boost::system::error_code& ec) mutable {
                         if (ec) return h(ec, std::size_t{0});
                         const boost::asio::mutable_buffer mb =
                             *boost::asio::buffer_sequence_begin(b);
                         std::size_t n = 0;
                         const boost::system::error_code rec = read_once(mb.data(), mb.size(), n);
                         if (rec == boost::asio::error::would_block)
                           return wait_then_read(std::move(h), b);
                         h(rec, n);
                       });
  }
  boost::system::error_code read_once(void* data, std::size_t size, std::size_t& n);

  boost::asio::ip::tcp::socket socket_;
  bool kernel_time_;
  read_info last_;
  clock::time_point floor_{};
};

using tls_stream = boost::asio::ssl::stream<timed_socket>;

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_TLS_HPP
