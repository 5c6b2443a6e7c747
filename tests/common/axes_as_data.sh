#!/usr/bin/env bash
# The axes of variation stay data (issue 18): outside core/ no code compares device kinds, outside the
# tier list (zero/tier.*) no code indexes tiers by number or compares a tier with a named one, and above
# model/ no code includes a model family's own headers or names its types and functions (it asks the
# family record, model/model_family.h).
# Usage: axes_as_data.sh SOURCE_DIR. Exits 1 naming every line that breaks it.
set -u
src=${1:?usage: axes_as_data.sh SOURCE_DIR}
cd "$src" || exit 2
kind='DeviceKind::[a-z_]+ *(==|!=|\?)|(==|!=) *DeviceKind::|case DeviceKind::|kind\(\) *(==|!=)'
tier='(^|[^A-Za-z_])Tier\( *[A-Za-z0-9_]+ *\)|(budget|plan_bytes|peak_bytes|bytes|total)\[[0-9]\]|(==|!=) *Tier::|Tier::[a-z_]+ *(==|!=)|case Tier::'
family='#include "model/gpt|(^|[^A-Za-z_])Gpt[A-Za-z0-9_]*|(init|load|save|infer)_gpt_'
# The patterns find what they are for (so that a broken pattern cannot pass).
for line in 'if (k == DeviceKind::cuda)' 'dev.kind() != x' 'case DeviceKind::cpu:'; do
  grep -qE "$kind" <<<"$line" || { echo "pattern misses: $line"; exit 2; }
done
for line in 'x = Tier(i);' 'in.budget[2] = 1;' 'if (gp.params_home == Tier::host)' 'case Tier::nvme:'; do
  grep -qE "$tier" <<<"$line" || { echo "pattern misses: $line"; exit 2; }
done
for line in '#include "model/gpt.h"' 'std::unique_ptr<Gpt> model;' 'const GptConfig& c' 'init_gpt_group(cfg, l, 1, g, v);' \
            'save_gpt_safetensors(path, layout, groups, dt);'; do
  grep -qE "$family" <<<"$line" || { echo "pattern misses: $line"; exit 2; }
done
folders=(launch train zero comm model offload perf)
status=0
if grep -rnE "$kind" --include=*.h --include=*.cc --include=*.cu "${folders[@]}"; then
  echo "device kinds compared outside core/ (ask the DeviceTraits instead)"
  status=1
fi
if grep -rnE "$tier" --include=*.h --include=*.cc --include=*.cu core "${folders[@]}" | grep -v '^zero/tier\.\(h\|cc\):'; then
  echo "tiers indexed or compared outside zero/tier.* (use PerTier, tiers() and the tier's medium)"
  status=1
fi
if grep -rnE "$family" --include=*.h --include=*.cc --include=*.cu launch train zero comm offload perf; then
  echo "a model family named above model/ (ask model_family(cfg) instead)"
  status=1
fi
[ $status = 0 ] && echo "no device-kind comparison outside core/; no tier arithmetic outside zero/tier.*;" \
  "no model family named above model/"
exit $status
