// counter_plan().apply() leaves the decision to the plan, whatever
// TICKCLOCK_SOURCE the test was started with.
#include <stdlib.h>

#include <string>

#include "doctest/doctest.h"
#include "tests/support/host_facts.h"

TEST_CASE("apply(): an inherited TICKCLOCK_SOURCE never decides for the plan") {
  const tctest::CounterPlan &plan = tctest::counter_plan();
  MESSAGE("the counter: " << plan.how());
  for (const char *inherited : {"system", "tsc", "auto"}) {
    CAPTURE(inherited);
    setenv("TICKCLOCK_SOURCE", inherited, 1);
    plan.apply();
    const char *v = getenv("TICKCLOCK_SOURCE");
    if (plan.forced)
      CHECK(std::string(v ? v : "(unset)") == "tsc");
    else if (plan.usable)
      CHECK(v == nullptr);  // the library's own choice
    else                    // the counter-path cases skip; nothing to decide
      CHECK(std::string(v ? v : "(unset)") == inherited);
  }
  unsetenv("TICKCLOCK_SOURCE");
}
