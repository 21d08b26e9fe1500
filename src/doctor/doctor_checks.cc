#include "doctor/doctor_checks.h"

namespace efacoll {
namespace doctor {

Checks run_checks(const Observation& obs) {
  Checks checks;
  check_fabric(obs, &checks);
  check_node(obs, &checks);
  check_mpi(obs, &checks);
  check_environment(obs, &checks);
  return checks;
}

std::string requested_provider(const EnvMap& env) {
  return Params::from_env(env).text(Param::kProvider);
}

}  // namespace doctor
}  // namespace efacoll
