#include "zero/optim/host_adamw.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace zt {
namespace {

// Below this many elements per thread, waking another thread costs more than it saves.
constexpr size_t kMinPerThread = 16384;
constexpr size_t kLanes = 8;

struct Coeffs {
  float b1, b2, one_minus_b1, one_minus_b2, lr, eps, wd, gs, bc1, bc2;
};

// cpu::adamw's expressions, in its order. Built without FMA contraction and
// with -fno-math-errno (build.mk) so that sqrt vectorizes to the correctly
// rounded vector instruction; on x86-64 an AVX2 clone is picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void adamw_range(const Coeffs& c, float* __restrict master, const float* __restrict grad,
                 float* __restrict m, float* __restrict v, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t k = i; k < i + kLanes; k++) {
      const float g = grad[k] * c.gs;
      m[k] = c.b1 * m[k] + c.one_minus_b1 * g;
      v[k] = c.b2 * v[k] + c.one_minus_b2 * g * g;
      const float mhat = m[k] / c.bc1, vhat = v[k] / c.bc2;
      master[k] -= c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.wd * master[k]);
    }
  }
  for (; i < n; i++) {
    const float g = grad[i] * c.gs;
    m[i] = c.b1 * m[i] + c.one_minus_b1 * g;
    v[i] = c.b2 * v[i] + c.one_minus_b2 * g * g;
    const float mhat = m[i] / c.bc1, vhat = v[i] / c.bc2;
    master[i] -= c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.wd * master[i]);
  }
}

}  // namespace

// Persistent workers: each call hands every worker the same function and its
// index; the calling thread is worker 0.
class HostAdamW::Pool {
 public:
  explicit Pool(int n) {
    for (int i = 1; i < n; i++) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  // Runs job(0..n-1), n <= the pool's size, and returns when all are done.
  void run(int n, const std::function<void(int)>& job) {
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = &job;
      active_ = n;
      pending_ = n - 1;
      generation_++;
    }
    wake_.notify_all();
    job(0);
    std::unique_lock<std::mutex> g(mu_);
    done_.wait(g, [this] { return pending_ == 0; });
  }

 private:
  void loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> g(mu_);
      wake_.wait(g, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      if (index >= active_) continue;
      const std::function<void(int)>* job = job_;
      g.unlock();
      (*job)(index);
      g.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int active_ = 0, pending_ = 0;
  bool quit_ = false;
};

HostAdamW::HostAdamW(int threads) : threads_(std::max(1, threads)), pool_(new Pool(threads_)) {}
HostAdamW::~HostAdamW() = default;

void HostAdamW::step(float* master, const float* grad, float* m, float* v, float* param, size_t n,
                     const AdamWArgs& a) {
  if (a.t < 1)
    throw std::runtime_error("host adamw: step t = " + std::to_string(a.t) + ", expected >= 1");
  // The same float values cpu::adamw computes (bias corrections in double, then rounded).
  const Coeffs c{a.beta1,
                 a.beta2,
                 1.0f - a.beta1,
                 1.0f - a.beta2,
                 a.lr,
                 a.eps,
                 a.weight_decay,
                 a.grad_scale,
                 static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta1), a.t)),
                 static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta2), a.t))};
  const int used =
      static_cast<int>(std::min<size_t>(threads_, std::max<size_t>(1, n / kMinPerThread)));
  // Contiguous ranges, whole blocks of lanes each (the last takes the rest).
  const size_t per = (n / used + kLanes - 1) / kLanes * kLanes;
  auto job = [&](int w) {
    const size_t lo = std::min(n, per * w), hi = w + 1 == used ? n : std::min(n, lo + per);
    adamw_range(c, master + lo, grad + lo, m + lo, v + lo, hi - lo);
    if (param) std::copy(master + lo, master + hi, param + lo);
  };
  if (used == 1) job(0);
  else pool_->run(used, job);
}

}  // namespace zt
