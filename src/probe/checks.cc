#include "src/probe/checks.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "src/probe/util.h"

namespace tickclock_probe {

std::vector<int> allowed_cpus() {
  std::vector<int> v;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) v.push_back(c);
  }
  if (v.empty()) v.push_back(0);
  return v;
}

namespace {

bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct SpinLock {
  std::atomic<bool> f{false};
  void lock() {
    while (f.exchange(true, std::memory_order_acquire)) {
    }
  }
  void unlock() { f.store(false, std::memory_order_release); }
};

// Joins t with SIGINT and SIGTERM blocked in the calling thread, so such a
// signal is taken by a measuring thread (which stops on it) or stays
// pending until the join is over, instead of running the handler inside
// pthread_join: under qemu-i386 that made the join fail with EDEADLK
// ("Resource deadlock avoided") and the probe abort instead of reporting
// INCOMPLETE.
void join_unsignalled(std::thread &t) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  t.join();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

std::vector<WarpPair> warp_test(uint64_t (*rd)(), double seconds) {
  std::vector<int> cpus = allowed_cpus();
  std::vector<WarpPair> out;
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < cpus.size(); i++)
    for (size_t j = i + 1; j < cpus.size(); j++) pairs.push_back({cpus[i], cpus[j]});
  if (pairs.empty()) return out;  // one CPU: nothing to compare
  double per = seconds / (double)pairs.size();
  if (per < 0.02) per = 0.02;
  for (auto &p : pairs) {
    if (interrupted()) break;
    progress("CPU pair %zu of %zu (CPUs %d and %d)", out.size() + 1, pairs.size(), p.first,
             p.second);
    WarpPair w;
    w.cpu_a = p.first;
    w.cpu_b = p.second;
    SpinLock lock;
    uint64_t last = 0;  // guarded by lock
    std::atomic<uint64_t> backward(0), iters(0), maxwarp(0);
    std::atomic<int> pinned(0);
    const uint64_t deadline = mono_raw_ns() + (uint64_t)(per * 1e9);
    auto body = [&](int cpu) {
      if (pin_self(cpu)) pinned++;
      uint64_t my_back = 0, my_iters = 0, my_max = 0;
      while (!interrupted()) {
        for (int k = 0; k < 256; k++) {
          lock.lock();
          uint64_t prev = last;
          uint64_t now = rd();
          last = now;
          lock.unlock();
          if (now < prev) {
            my_back++;
            if (prev - now > my_max) my_max = prev - now;
          }
        }
        my_iters += 256;
        if (mono_raw_ns() >= deadline) break;
      }
      backward += my_back;
      iters += my_iters;
      uint64_t m = maxwarp.load();
      while (my_max > m && !maxwarp.compare_exchange_weak(m, my_max)) {
      }
    };
    std::thread ta(body, p.first), tb(body, p.second);
    join_unsignalled(ta);
    join_unsignalled(tb);
    w.iterations = iters;
    w.backward = backward;
    w.max_warp_ticks = maxwarp;
    w.pinned = pinned.load() == 2;
    w.completed = !interrupted();
    out.push_back(w);
  }
  return out;
}

std::vector<MonoCpu> monotonic_per_cpu(uint64_t (*fast)(), uint64_t (*ordered)(), double seconds) {
  std::vector<int> cpus = allowed_cpus();
  std::vector<MonoCpu> out;
  double per = seconds / (double)cpus.size();
  for (int cpu : cpus) {
    if (interrupted()) break;
    progress("CPU %d (%zu of %zu)", cpu, out.size() + 1, cpus.size());
    MonoCpu m;
    m.cpu = cpu;
    std::thread t([&] {
      m.pinned = pin_self(cpu);
      const uint64_t deadline = mono_raw_ns() + (uint64_t)(per * 1e9);
      while (!interrupted()) {
        // consecutive fast reads, then consecutive ordered reads: each
        // variant's own contract (a fast read may move before an earlier
        // ordered one, so the two are not compared with each other)
        uint64_t prev = fast();
        for (int k = 0; k < 4096; k++) {
          uint64_t a = fast();
          m.backward += a < prev;
          prev = a;
        }
        prev = ordered();
        for (int k = 0; k < 4096; k++) {
          uint64_t b = ordered();
          m.backward += b < prev;
          prev = b;
        }
        m.reads += 8194;
        if (mono_raw_ns() >= deadline) break;
      }
    });
    join_unsignalled(t);
    m.completed = !interrupted();
    out.push_back(m);
  }
  return out;
}

}  // namespace tickclock_probe
