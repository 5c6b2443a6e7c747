# usage: held-out-2-before.sh TIERZERO (WORK: the validate run's folder, /var/tmp/v5)
tz=$1; work=${2:-/var/tmp/v5}
gpt_h2=(--n-layer 12 --n-embd 192 --n-head 3 --vocab 256 --seq-len 96 --micro-batch 4)
gpt_h3=(--n-layer 4 --n-embd 512 --n-head 8 --vocab 256 --seq-len 128 --micro-batch 2)
llama_h2=(--init-from "$work/llama_h2" --seq-len 128 --micro-batch 4)
llama_h3=(--init-from "$work/llama_h3" --seq-len 64 --micro-batch 4)
p() { local w=$1 t=$2; shift 2; local -n m=$1; shift; "$tz" plan --world "$w" "${m[@]}" "$@" --threads-per-rank "$t" --hardware "$work/hw.json" --ranks-per-node "$w" | awk '/^  step /{print $2}'; }
p 1 2 gpt_h2 --zero-stage 0
p 2 1 gpt_h2 --zero-stage 2 --dtype bf16
p 2 1 gpt_h3 --zero-stage 1
p 4 1 gpt_h3 --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer nvme --nvme-path "$work/nvme"
p 2 1 gpt_h2 --zero-stage 3 --param-persistence-threshold 0
p 1 2 llama_h2 --zero-stage 0 --dtype bf16
p 4 1 llama_h2 --zero-stage 2
p 2 1 llama_h3 --zero-stage 1 --offload-optimizer cpu
p 2 1 llama_h3 --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer cpu --offload-param cpu
p 2 2 llama_h3 --zero-stage 2 --offload-optimizer nvme --nvme-path "$work/nvme"
