#include "zero/comm/peer_watch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/sockios.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace zt {

namespace {

// The running watch's self-pipe and the stop signal that came, for signal
// handlers. A byte in the pipe only wakes the thread (a full pipe already
// will); what happened is in the flags.
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_pending_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need a lock-free flag");

int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string os_error() { return std::strerror(errno); }

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The subnet Open MPI's TCP transport is told to use (the emulated clusters
// set OMPI_MCA_btl_tcp_if_include to theirs), as address and mask.
bool mpi_subnet(uint32_t* net, uint32_t* mask) {
  const char* spec = std::getenv("OMPI_MCA_btl_tcp_if_include");
  if (!spec) return false;
  const std::string s = spec;
  const size_t slash = s.find('/');
  in_addr a{};
  if (slash == std::string::npos || inet_pton(AF_INET, s.substr(0, slash).c_str(), &a) != 1)
    return false;
  const int bits = std::atoi(s.c_str() + slash + 1);
  if (bits < 0 || bits > 32) return false;
  *mask = bits == 0 ? 0 : ~uint32_t(0) << (32 - bits);
  *net = ntohl(a.s_addr) & *mask;
  return true;
}

// The address peers on other hosts reach this rank at: the one in MPI's
// subnet, else the first non-loopback IPv4 address that is up, else loopback.
uint32_t advertised_address() {
  uint32_t net = 0, mask = 0;
  const bool subnet = mpi_subnet(&net, &mask);
  uint32_t found = htonl(INADDR_LOOPBACK);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const uint32_t a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    if (subnet && (ntohl(a) & mask) != net) continue;
    found = a;
    break;
  }
  freeifaddrs(list);
  return found;
}

struct Endpoint {
  char host[64];
  uint32_t address;  // network order
  uint16_t port;     // network order
};

std::string endpoint_text(uint32_t address, uint16_t port) {
  char buf[INET_ADDRSTRLEN] = "?";
  in_addr a{};
  a.s_addr = address;
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(port));
}

// Waits for `events` on fd until `deadline_ns` (steady); false on timeout.
bool wait_for(int fd, short events, int64_t deadline_ns) {
  while (true) {
    const int64_t left_ms = (deadline_ns - clock_ns(CLOCK_MONOTONIC)) / 1000000;
    if (left_ms <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left_ms));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// After this rank's goodbye and FIN: true once the peer has acknowledged every
// byte sent (nothing left for a reset to drop) or its side is gone. What the
// peer still sends is read and dropped, so its sends do not stall.
bool goodbye_delivered(int fd) {
  char buf[4096];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    break;
  }
  int unacknowledged = 0;
  return ioctl(fd, SIOCOUTQ, &unacknowledged) != 0 || unacknowledged == 0;
}

// The rank a new connection names in its first message, -1 if it closes,
// sends something else or nothing by `deadline_ns`; what followed it in `rest`.
int read_hello(int fd, int64_t deadline_ns, std::string* rest) {
  std::string got;
  while (true) {
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    else if (n == 0 || (errno != EAGAIN && errno != EINTR)) return -1;
    WatchMessage m;
    size_t used = 0;
    try {
      used = decode_watch_message(got.data(), got.size(), &m);
    } catch (const std::runtime_error&) {
      return -1;
    }
    if (used > 0) {
      *rest = got.substr(used);
      return m.rank;
    }
    if (n < 0 && !wait_for(fd, POLLIN, deadline_ns)) return -1;
  }
}

}  // namespace

WatchInstant watch_now() { return {clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)}; }

struct PeerWatch::Peer {
  int rank = 0;
  int fd = -1;
  std::string inbox, outbox;
};

// Heartbeats waiting in a peer's outbox beyond this are dropped: a stopped
// peer does not read, and its silence is what the timeout rule detects.
constexpr size_t kMaxOutbox = 64 * 1024;

PeerWatch::PeerWatch(const PeerWatchSettings& s,
                     std::function<void(const FailureReport&)> on_failure)
    : settings_(s), on_failure_(std::move(on_failure)) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  connect_mesh(s.connect_timeout_s);
  if (pipe(wake_) != 0) throw std::runtime_error("peer watch: pipe: " + os_error());
  set_nonblocking(wake_[0]);
  set_nonblocking(wake_[1]);
  liveness_.reset(new PeerLiveness(rank_, hosts_, static_cast<int64_t>(s.failure_timeout_s * 1e9),
                                   watch_now()));
  g_pending_signal.store(0);
  g_wake_fd.store(wake_[1]);
  thread_ = std::thread([this] { run(); });
}

void PeerWatch::wake() const {
  const unsigned char b = 1;
  if (write(wake_[1], &b, 1) < 0) {
  }
}

PeerWatch::~PeerWatch() {
  stop_requested_.store(true);
  wake();
  if (thread_.joinable()) thread_.join();
  g_wake_fd.store(-1);
  close(wake_[0]);
  close(wake_[1]);
}

void PeerWatch::position_changed() {
  if (wake_[1] >= 0) wake();
}

void PeerWatch::notify_signal(int sig) {
  const int saved = errno;
  int none = 0;
  g_pending_signal.compare_exchange_strong(none, sig);
  const int fd = g_wake_fd.load();
  const unsigned char b = 1;
  if (fd >= 0 && write(fd, &b, 1) < 0) {
  }
  errno = saved;
}

// Every rank connects to the ranks above it and accepts the ranks below it;
// the connecting side's first message names it.
void PeerWatch::connect_mesh(double timeout_s) {
  const int64_t deadline = clock_ns(CLOCK_MONOTONIC) + static_cast<int64_t>(timeout_s * 1e9);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) throw std::runtime_error("peer watch: socket: " + os_error());
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof any;
  if (bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
      listen(listener, world_) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
    const std::string why = os_error();
    close(listener);
    throw std::runtime_error("peer watch: cannot listen on a TCP port: " + why);
  }
  Endpoint mine{};
  gethostname(mine.host, sizeof mine.host - 1);
  mine.address = advertised_address();
  mine.port = any.sin_port;
  std::vector<Endpoint> all(static_cast<size_t>(world_));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  for (const Endpoint& e : all) hosts_.push_back(std::string(e.host, strnlen(e.host, 64)));
  peers_.resize(static_cast<size_t>(world_));

  auto fail_setup = [&](const std::string& why) {
    close(listener);
    for (auto& p : peers_)
      if (p && p->fd >= 0) close(p->fd);
    throw std::runtime_error("peer watch: rank " + std::to_string(rank_) + ": " + why);
  };
  const std::string hello = encode_watch_message(message(WatchKind::Heartbeat));
  for (int r = rank_ + 1; r < world_; r++) {
    // A peer on this host is reached over loopback; others at their advertised address.
    const Endpoint& e = all[static_cast<size_t>(r)];
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = e.port;
    to.sin_addr.s_addr = hosts_[static_cast<size_t>(r)] == hosts_[static_cast<size_t>(rank_)]
                             ? htonl(INADDR_LOOPBACK)
                             : e.address;
    const std::string where = "rank " + std::to_string(r) + " (" + hosts_[static_cast<size_t>(r)] +
                              ") at " + endpoint_text(to.sin_addr.s_addr, to.sin_port);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    peers_[static_cast<size_t>(r)].reset(new Peer{r, fd, "", ""});
    if (fd < 0) fail_setup("socket: " + os_error());
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)
      fail_setup("cannot connect to " + where + ": " + os_error());
    int err = 0;
    socklen_t el = sizeof err;
    if (!wait_for(fd, POLLOUT, deadline))
      fail_setup("no connection to " + where + " within " + std::to_string(timeout_s) + " s");
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err != 0) fail_setup("cannot connect to " + where + ": " + std::strerror(err));
    peers_[static_cast<size_t>(r)]->outbox = hello;
    flush(*peers_[static_cast<size_t>(r)]);
  }
  // A connection that does not name a lower rank promptly is not one of ours: ignored.
  for (int accepted = 0; accepted < rank_;) {
    if (!wait_for(listener, POLLIN, deadline))
      fail_setup("only " + std::to_string(accepted) + " of the " + std::to_string(rank_) +
                 " lower ranks connected within " + std::to_string(timeout_s) + " s");
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    std::string rest;
    const int r = read_hello(fd, std::min(deadline, clock_ns(CLOCK_MONOTONIC) + 5000000000), &rest);
    if (r < 0 || r >= rank_ || peers_[static_cast<size_t>(r)]) {
      close(fd);
      continue;
    }
    peers_[static_cast<size_t>(r)].reset(new Peer{r, fd, rest, ""});
    accepted++;
  }
  close(listener);
  for (auto& p : peers_) {
    if (!p) continue;
    const int one = 1;
    setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

WatchMessage PeerWatch::message(WatchKind kind) const {
  WatchMessage m;
  m.kind = kind;
  m.rank = rank_;
  m.step = step_.load(std::memory_order_relaxed);
  m.micro = micro_.load(std::memory_order_relaxed);
  m.wall_ns = clock_ns(CLOCK_REALTIME);
  m.phase = phase_.load(std::memory_order_relaxed);
  m.engine_phase = engine_phase_.load(std::memory_order_relaxed);
  return m;
}

void PeerWatch::send_to_all(const WatchMessage& m) {
  const std::string bytes = encode_watch_message(m);
  for (auto& p : peers_) {
    if (!p || p->fd < 0) continue;
    // Goodbye and Leaving always queue; a heartbeat is dropped for a peer that does not read.
    if (m.kind != WatchKind::Heartbeat || p->outbox.size() < kMaxOutbox) p->outbox += bytes;
    flush(*p);
  }
}

void PeerWatch::flush(Peer& p) {
  while (!p.outbox.empty() && p.fd >= 0) {
    const ssize_t n = send(p.fd, p.outbox.data(), p.outbox.size(), MSG_NOSIGNAL);
    if (n > 0) p.outbox.erase(0, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else return;  // full (EAGAIN) or broken: the read side reports a closed connection
  }
}

void PeerWatch::read_from(Peer& p, WatchInstant now) {
  bool closed = false;
  while (true) {
    char buf[4096];
    const ssize_t n = recv(p.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      closed = true;
      break;
    }
    p.inbox.append(buf, static_cast<size_t>(n));
  }
  // The messages before a close count (a goodbye is the last one).
  try {
    WatchMessage m;
    while (size_t used = decode_watch_message(p.inbox.data(), p.inbox.size(), &m)) {
      p.inbox.erase(0, used);
      liveness_->heard(p.rank, m, now);
    }
  } catch (const std::runtime_error&) {
    closed = true;  // not a watch message: the stream is useless, as if it had closed
  }
  if (closed) {
    close(p.fd);
    p.fd = -1;
    p.inbox.clear();
    liveness_->closed(p.rank, now);
  }
}

void PeerWatch::run() {
  const int64_t period_ns = int64_t(settings_.heartbeat_ms) * 1000000;
  const int64_t grace_ns = static_cast<int64_t>(settings_.signal_grace_s * 1e9);
  int64_t next_beat = clock_ns(CLOCK_MONOTONIC);
  bool stop = false;
  std::vector<pollfd> fds;
  while (!stop) {
    fds.assign(1, pollfd{wake_[0], POLLIN, 0});
    for (auto& p : peers_)
      if (p && p->fd >= 0)
        fds.push_back(
            pollfd{p->fd, static_cast<short>(POLLIN | (p->outbox.empty() ? 0 : POLLOUT)), 0});
    // Until the next heartbeat, a peer's timeout (+1 ms: past it; INT64_MAX, none
    // watched, stays out of reach without overflowing), or the signal grace's end.
    const int64_t next_timeout = liveness_->next_timeout_ns();
    int64_t wake_at =
        next_timeout > next_beat ? next_beat : std::min(next_beat, next_timeout + 1000000);
    if (stop_signal_ && reporting_) wake_at = std::min(wake_at, signal_at_.steady_ns + grace_ns);
    const int64_t wait_ns = wake_at - clock_ns(CLOCK_MONOTONIC);
    const int wait_ms = static_cast<int>(std::max<int64_t>(0, (wait_ns + 999999) / 1000000));
    poll(fds.data(), fds.size(), wait_ms);
    const WatchInstant now = watch_now();
    // Woken: the position changed (a heartbeat goes now), a stop, or a signal.
    unsigned char b[256];
    bool woken = false;
    while (read(wake_[0], b, sizeof b) > 0) woken = true;
    if (woken) next_beat = now.steady_ns;
    stop = stop_requested_.load();
    if (const int sig = g_pending_signal.exchange(0); sig != 0 && !stop_signal_) {
      stop_signal_ = sig;
      signal_at_ = now;
    }
    for (auto& p : peers_) {
      if (!p || p->fd < 0) continue;
      read_from(*p, now);
      flush(*p);
    }
    if (now.steady_ns >= next_beat) {
      send_to_all(message(WatchKind::Heartbeat));
      next_beat = std::max(next_beat + period_ns, now.steady_ns);
    }
    liveness_->check_timeouts(now);
    if (stop) break;
    if (reporting_ && !liveness_->lost().empty()) fail(now);
    if (stop_signal_ && now.steady_ns - signal_at_.steady_ns > grace_ns) reporting_ = false;
  }
  say_goodbye();
}

// The goodbye is queued after everything else and the stream's end (FIN)
// after it; each connection closes once the peer has acknowledged both, or
// has gone, or a second has passed. Closing a socket that holds unread
// heartbeats resets the connection at once and drops what the kernel had not
// yet transmitted: a goodbye lost that way reads, to the peer, as a death.
void PeerWatch::say_goodbye() {
  send_to_all(message(WatchKind::Goodbye));
  const int64_t deadline = clock_ns(CLOCK_MONOTONIC) + 1000000000;
  for (auto& p : peers_) {
    if (!p || p->fd < 0) continue;
    while (!p->outbox.empty() && wait_for(p->fd, POLLOUT, deadline)) flush(*p);
    shutdown(p->fd, SHUT_WR);
  }
  for (auto& p : peers_) {
    if (!p || p->fd < 0) continue;
    while (!goodbye_delivered(p->fd)) {
      const int64_t now = clock_ns(CLOCK_MONOTONIC);
      if (now >= deadline) break;
      wait_for(p->fd, POLLIN, std::min(deadline, now + 1000000));
    }
    close(p->fd);
    p->fd = -1;
  }
}

void PeerWatch::fail(WatchInstant now) {
  WatchMessage leaving = message(WatchKind::Leaving);
  FailureReport r;
  for (const PeerState* p : liveness_->lost()) {
    leaving.lost.push_back(p->rank);
    r.lost.push_back(*p);
  }
  send_to_all(leaving);
  r.rank = rank_;
  r.host = hosts_[static_cast<size_t>(rank_)];
  r.step = leaving.step;
  r.micro = leaving.micro;
  r.phase = leaving.phase;
  r.engine_phase = leaving.engine_phase;
  r.detected = now;
  r.stop_signal = stop_signal_;
  r.heartbeat_s = settings_.heartbeat_ms / 1e3;
  r.failure_timeout_s = settings_.failure_timeout_s;
  on_failure_(r);
  if (stop_signal_) {
    std::signal(stop_signal_, SIG_DFL);
    std::raise(stop_signal_);
    std::_Exit(128 + stop_signal_);
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace zt
