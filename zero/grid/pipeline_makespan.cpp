#include "zero/grid/pipeline_makespan.h"

#include "zero/grid/pipeline_schedule.h"
#include "zero/grid/pipeline_simulator.h"

namespace zt {

double one_f_one_b_makespan(int stages, int micro_batches, double forward_s, double backward_s,
                            double message_s) {
  PipelineTimes times;
  times.forward_s = forward_s;
  times.backward_s = backward_s;
  times.message_s = message_s;
  return simulate_pipeline(pipeline_actions(PipelineSchedule::OneFOneB, stages, micro_batches),
                           times)
      .makespan_s;
}

}  // namespace zt
