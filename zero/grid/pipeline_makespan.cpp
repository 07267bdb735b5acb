#include "zero/grid/pipeline_makespan.h"

#include "zero/grid/pipeline_schedule.h"
#include "zero/grid/pipeline_simulator.h"

namespace zt {

double pipeline_makespan(PipelineSchedule schedule, int stages, int micro_batches, double forward_s,
                         double backward_s, const std::vector<double>& boundary_message_s) {
  PipelineTimes times;
  times.forward_s = forward_s;
  times.backward_s = backward_s;
  times.boundary_message_s = boundary_message_s;
  return simulate_pipeline(pipeline_actions(schedule, stages, micro_batches), times).makespan_s;
}

}  // namespace zt
