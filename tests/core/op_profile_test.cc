// Tests core/op_profile.h and the device's profiled backend on the cpu: every call made while a profile
// is attached lands in its op's row with its count, its FLOPs and bytes exactly, and a time from the
// device's timing events; products take the model's names by shape; nothing is recorded detached.
#include "core/op_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/error.h"

namespace tz {
namespace {

const OpRow* row(const OpProfile& p, const std::string& name) {
  for (const OpRow& r : p.rows())
    if (r.name == name) return &r;
  return nullptr;
}

TEST(OpProfile, EachCallLandsInItsOpsRowWithItsFlopsAndBytesExactly) {
  auto dev = make_cpu_device();
  auto s = dev->create_stream();
  Backend& be = dev->backend();
  OpProfile prof(*dev);
  prof.name_gemms({{Trans::no, Trans::yes, 4, 6, 8, DType::f32, "qkv.fwd"}});
  std::vector<float> a(4 * 8, 0.5f), b(6 * 8, 0.25f), c(4 * 6), bf(6 * 8 * 2), x(100, 1.0f), y(100);
  dev->set_op_profile(&prof);
  for (int i = 0; i < 3; ++i) be.gemm(*s, Trans::no, Trans::yes, 4, 6, 8, a.data(), b.data(), c.data(), Accumulate::no);
  be.gemm(*s, Trans::no, Trans::no, 4, 6, 8, a.data(), b.data(), c.data(), Accumulate::yes);  // unnamed shape
  be.gelu_forward(*s, y.data(), x.data(), 100);
  EXPECT_EQ(prof.collect(), 5u);
  dev->set_op_profile(nullptr);
  be.gelu_forward(*s, y.data(), x.data(), 100);  // detached: not recorded
  EXPECT_EQ(prof.collect(), 0u);

  const OpRow* q = row(prof, "qkv.fwd");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->calls, 3u);
  EXPECT_EQ(q->flops, 3 * 2.0 * 4 * 6 * 8);
  EXPECT_EQ(q->bytes, 3 * 4.0 * (4 * 8 + 8 * 6 + 4 * 6));
  EXPECT_GE(q->ms, 0.0);
  const OpRow* u = row(prof, "gemm 4x6x8");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->calls, 1u);
  EXPECT_EQ(u->bytes, 4.0 * (4 * 8 + 8 * 6 + 2 * 4 * 6));  // accumulating reads C too
  const OpRow* g = row(prof, "gelu");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->calls, 1u);
  EXPECT_EQ(g->flops, 0.0);
  EXPECT_EQ(g->bytes, 100 * 8.0);
  EXPECT_EQ(prof.rows().size(), 3u);
  EXPECT_EQ(prof.rows()[0].name, "qkv.fwd");  // first seen first
}

// Two names of one shape report under both; the same name twice stays one.
TEST(OpProfile, ProductsTwoNamesShareReportUnderBoth) {
  auto dev = make_cpu_device();
  OpProfile prof(*dev);
  prof.name_gemms({{Trans::no, Trans::yes, 8, 8, 8, DType::f32, "lmhead.fwd"},
                   {Trans::no, Trans::yes, 8, 8, 8, DType::f32, "fcproj.dgrad"},
                   {Trans::no, Trans::yes, 8, 8, 8, DType::f32, "lmhead.fwd"},
                   {Trans::yes, Trans::no, 8, 8, 8, DType::f32, "lmhead.wgrad"}});
  EXPECT_EQ(prof.gemm_name(Trans::no, Trans::yes, 8, 8, 8), "lmhead.fwd|fcproj.dgrad");
  EXPECT_EQ(prof.gemm_name(Trans::yes, Trans::no, 8, 8, 8), "lmhead.wgrad");
  EXPECT_EQ(prof.gemm_name(Trans::no, Trans::no, 8, 8, 8), "gemm 8x8x8");
}

// On the cpu a timing event reads the wall clock when its stream reaches it: a pair around a 20 ms
// pause on the host measures at least the pause.
TEST(OpProfile, CpuTimingEventsReadTheWallClock) {
  auto dev = make_cpu_device();
  auto s = dev->create_stream();
  auto a = dev->create_timing_event(), b = dev->create_timing_event();
  a->record(*s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  b->record(*s);
  EXPECT_GE(b->ms_since(*a), 20.0);
  EXPECT_LT(b->ms_since(*a), 5000.0);
  auto plain = dev->create_event();
  plain->record(*s);
  EXPECT_THROW(b->ms_since(*plain), Error);  // an event made without timing cannot be timed
}

TEST(OpProfile, CausalAttentionCountsFlashAttentionsFlops) {
  const AttentionShape a{2, 16, 4, 2, 8};
  EXPECT_EQ(attention_forward_flops(a), 4.0 * 2 * 4 * 16 * 16 * 8 / 2);
  EXPECT_EQ(attention_backward_flops(a), 2.5 * attention_forward_flops(a));
}

}  // namespace
}  // namespace tz
