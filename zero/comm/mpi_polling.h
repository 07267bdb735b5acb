// Waiting for MPI without spinning. MPI_Wait and the blocking collectives spin
// until the call completes (calling sched_yield under mpi_yield_when_idle).
// Where ranks share cores, a spinning rank can keep them from the ranks it
// waits for: on an emulated cluster, whole nodes stood still for seconds
// (docs/clusters.md, "Stalls of seconds"). So every wait in zerotrain polls:
// it spins for 100 us, then sleeps between tests, each sleep a twentieth of
// the time waited so far (50 us to 1 ms): a long wait costs few wake-ups and
// ends at most ~5% (or 1 ms) late. Only where ranks share cores, though: MPI
// advances a transfer only inside MPI calls, so a sleeping waiter slows a
// large one (W = 2 on 2 cores, 3.5 M parameters: 286 ms steps polling against
// 171 ms spinning); where each rank has a core, waits spin on MPI_Test.
#pragma once

#include <mpi.h>

#include <functional>

namespace zt {

// Whether waits sleep between tests (the default) or spin; the trainer sets
// it once, from the ranks sharing this machine's cores (train/loop/runtime.cpp).
void set_waits_sleep(bool sleep);
bool waits_sleep();

// Returns once done() is true, testing it as above.
void poll_until(const std::function<bool()>& done);

// Completes a request (of a non-blocking call made in place of a blocking one).
void complete_polling(MPI_Request& request);

}  // namespace zt
