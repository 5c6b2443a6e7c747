// plan_memory() at its own layer: each group's state buffers where placement puts them, with the sizes
// the shard map gives; the per-tier totals are the sums of the buffers (and the NVMe store); a budget
// one byte short is refused naming the tier and its flag; and what the plan lists is what a cpu device
// allocates for it, as the device's budgets see it.
#include "zero/memory_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/device.h"
#include "model/model_config.h"

namespace tz {
namespace {

PlanInputs inputs(int stage, Tier optimizer, DType dt = DType::bf16) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = {4, 64};
  in.dtype = dt;
  in.zero.stage = stage;
  in.offload.optimizer = optimizer;
  if (optimizer == Tier::nvme) in.offload.nvme_paths = {"unused"};
  in.world = 2;
  in.rank = 1;
  return in;
}

std::map<std::string, BufferSpec> by_name(const MemoryPlan& p) {
  std::map<std::string, BufferSpec> m;
  for (const BufferSpec& b : p.buffers) EXPECT_TRUE(m.emplace(b.name, b).second) << "twice: " << b.name;
  return m;
}

TEST(MemoryPlan, Stage2WithTheOptimizerOnTheHostPlacesEachGroupsStatesWithTheirShardSizes) {
  const MemoryPlan p = plan_memory(inputs(2, Tier::host));
  const auto b = by_name(p);
  for (int g = 0; g < p.map.groups(); ++g) {
    const std::string& name = p.layout.groups[g].name;
    const GroupShards& sh = p.map.group(g);
    SCOPED_TRACE(name);
    ASSERT_TRUE(b.count(params_buffer(name)));
    EXPECT_EQ(b.at(params_buffer(name)).kind, MemoryKind::device);
    EXPECT_EQ(b.at(params_buffer(name)).bytes, sh.padded * 2);  // bf16, whole
    EXPECT_EQ(b.at(grad_buffer(name)).kind, MemoryKind::pinned_host);
    EXPECT_EQ(b.at(grad_buffer(name)).cls, "fp32 grad shards");
    EXPECT_EQ(b.at(grad_buffer(name)).bytes, sh.shard_count * 4);
    for (const std::string& s : {master_buffer(name), adam_m_buffer(name), adam_v_buffer(name)}) {
      ASSERT_TRUE(b.count(s)) << s;
      EXPECT_EQ(b.at(s).kind, MemoryKind::pinned_host) << s;
      EXPECT_EQ(b.at(s).bytes, sh.shard_count * 4) << s;
    }
  }
  EXPECT_EQ(p.nvme_bytes, 0u);
}

// fp32 on the device at stage 0: the working params are the master (no copy), every state whole.
TEST(MemoryPlan, Fp32WithoutOffloadKeepsNoSeparateMaster) {
  const MemoryPlan p = plan_memory(inputs(0, Tier::device, DType::f32));
  const auto b = by_name(p);
  for (int g = 0; g < p.map.groups(); ++g) {
    const std::string& name = p.layout.groups[g].name;
    const std::size_t padded = p.map.group(g).padded;
    EXPECT_FALSE(b.count(master_buffer(name))) << name;
    EXPECT_EQ(b.at(params_buffer(name)).bytes, padded * 4) << name;
    EXPECT_EQ(b.at(grad_buffer(name)).bytes, padded * 4) << name;
    EXPECT_EQ(b.at(adam_m_buffer(name)).bytes, padded * 4) << name;
    EXPECT_EQ(b.at(adam_m_buffer(name)).kind, MemoryKind::device) << name;
  }
}

// The optimizer on NVMe: no master, m or v buffer in memory; the store holds at least their bytes.
TEST(MemoryPlan, TheOptimizerOnNvmeLeavesItsStatesToTheStore) {
  const MemoryPlan p = plan_memory(inputs(1, Tier::nvme));
  const auto b = by_name(p);
  std::size_t states = 0;
  for (int g = 0; g < p.map.groups(); ++g) {
    const std::string& name = p.layout.groups[g].name;
    EXPECT_FALSE(b.count(master_buffer(name)) || b.count(adam_m_buffer(name)) || b.count(adam_v_buffer(name)))
        << name;
    states += 3 * 4 * p.map.group(g).shard_count;
  }
  EXPECT_GE(p.nvme_bytes, states);
  EXPECT_EQ(p.total(Tier::nvme), p.nvme_bytes);
}

TEST(MemoryPlan, EachTiersTotalIsTheSumOfItsBuffers) {
  for (int stage = 0; stage <= 3; ++stage)
    for (Tier t : {Tier::device, Tier::host, Tier::nvme}) {
      const MemoryPlan p = plan_memory(inputs(stage, t));
      std::size_t dev = 0, host = 0;
      for (const BufferSpec& b : p.buffers) (b.kind == MemoryKind::device ? dev : host) += b.bytes;
      EXPECT_EQ(p.total(Tier::device), dev) << stage;
      EXPECT_EQ(p.total(Tier::host), host) << stage;
      EXPECT_EQ(p.total(Tier::nvme), p.nvme_bytes) << stage;
    }
}

TEST(MemoryPlan, ABudgetOneByteShortIsRefusedNamingTheTierAndItsFlag) {
  PlanInputs in = inputs(2, Tier::host);
  const MemoryPlan full = plan_memory(in);
  in.budget[Tier::device] = full.total(Tier::device);
  in.budget[Tier::host] = full.total(Tier::host);
  EXPECT_EQ(plan_memory(in).fit_problem(), "");
  in.budget[Tier::host] -= 1;
  const std::string m = plan_memory(in).fit_problem();
  EXPECT_NE(m.find("out of host memory budget"), std::string::npos) << m;
  EXPECT_NE(m.find("short by 1 B"), std::string::npos) << m;
  EXPECT_NE(m.find("--host-mem"), std::string::npos) << m;
  in.budget[Tier::host] += 1;
  in.budget[Tier::device] -= 1;
  const std::string d = plan_memory(in).fit_problem();
  EXPECT_NE(d.find("out of device memory budget"), std::string::npos) << d;
  EXPECT_NE(d.find("--device-mem"), std::string::npos) << d;
}

// Plan equals allocation at this layer: a cpu device given exactly the plan's budgets allocates every
// planned buffer, and its budgets then hold the plan's totals.
TEST(MemoryPlan, ACpuDeviceAllocatesExactlyThePlannedBytes) {
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryPlan p = plan_memory(inputs(stage, Tier::host));
    DeviceOptions o;
    o.device_mem = p.total(Tier::device);
    o.host_mem = p.total(Tier::host);
    auto dev = make_cpu_device(o);
    PlannedBuffers planned(*dev, p.buffers);
    std::vector<Buffer<std::byte>> held;
    for (const BufferSpec& b : p.buffers) held.push_back(planned.take<std::byte>(b.name));
    EXPECT_EQ(dev->budget(MemoryKind::device).used(), p.total(Tier::device)) << stage;
    EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used(), p.total(Tier::host)) << stage;
  }
}

}  // namespace
}  // namespace tz
