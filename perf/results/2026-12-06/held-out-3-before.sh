# usage: held-out-3-before.sh TIERZERO [WORK] (WORK: the validate run's folder, /var/tmp/v6): each held-out-3
# configuration's predicted step on that run's calibration, as validate_plan.sh asks the plan for it.
tz=$1; work=${2:-/var/tmp/v6}
gpt_h4=(--n-layer 10 --n-embd 160 --n-head 5 --vocab 256 --seq-len 64 --micro-batch 6)
gpt_h5=(--n-layer 6 --n-embd 320 --n-head 5 --vocab 256 --seq-len 80 --micro-batch 4)
llama_h4=(--init-from "$work/llama_h4" --seq-len 96 --micro-batch 4)
llama_h5=(--init-from "$work/llama_h5" --seq-len 64 --micro-batch 3)
p() { local w=$1 t=$2; shift 2; local -n m=$1; shift; "$tz" plan --world "$w" "${m[@]}" "$@" --threads-per-rank "$t" --hardware "$work/hw.json" --ranks-per-node "$w" | awk '/^  step /{print $2}'; }
p 1 2 gpt_h4 --zero-stage 1
p 1 1 gpt_h4 --zero-stage 0 --dtype bf16
p 2 1 gpt_h5 --zero-stage 2 --offload-optimizer cpu
p 4 1 gpt_h5 --zero-stage 3 --param-persistence-threshold 0
p 2 1 gpt_h5 --zero-stage 1 --dtype bf16
p 1 2 llama_h4 --zero-stage 3 --param-persistence-threshold 0
p 2 1 llama_h4 --zero-stage 2 --dtype bf16
p 2 1 llama_h5 --zero-stage 0
p 4 1 llama_h5 --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer nvme --offload-param nvme --nvme-path "$work/nvme"
p 1 2 llama_h5 --zero-stage 1 --offload-optimizer nvme --nvme-path "$work/nvme"
