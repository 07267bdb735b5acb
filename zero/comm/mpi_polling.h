// Waiting for MPI without spinning. MPI_Wait and the blocking collectives spin
// until the call completes (calling sched_yield under mpi_yield_when_idle).
// Where ranks share cores, a spinning rank can keep them from the ranks it
// waits for: on an emulated cluster, whole nodes stood still for seconds
// (docs/clusters.md, "Stalls of seconds"). So every wait in zerotrain polls:
// it spins for 100 us, then sleeps between tests, each sleep a twentieth of
// the time waited so far (50 us to 1 ms): a long wait costs few wake-ups and
// ends at most ~5% (or 1 ms) late.
#pragma once

#include <mpi.h>

#include <functional>

namespace zt {

// Returns once done() is true, testing it as above.
void poll_until(const std::function<bool()>& done);

// Completes a request (of a non-blocking call made in place of a blocking one).
void complete_polling(MPI_Request& request);

}  // namespace zt
