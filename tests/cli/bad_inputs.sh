#!/bin/bash
# Bad and hostile inputs (tests/data/bad/): each row runs simtrain on one and
# asserts the exit status (README "Exit status": 1 usage, 2 bad input, 3
# simulation failure) and the exact first line of stderr.  A crash (abort,
# segfault) shows as 134/139 and an uncaught C++ exception as 134, so a row
# that once crashed fails loudly.
# usage: bad_inputs.sh <simtrain> <shared-dir>
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
cd "$(dirname "$0")/../data" || fail "no tests/data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# exit status | first line of stderr | arguments (split on spaces; TMP is a
# scratch folder)
cases=$(cat <<'EOF'
2|simtrain: error: results 'fuzz/hdf5/overread-ranks.h5': dataset '/ranks': the chunk of rows 0.. says filters were skipped (mask 0xff), which the writer never does (damaged file?)|report fuzz/hdf5/overread-ranks.h5
2|simtrain: error: results 'fuzz/hdf5/overread-timeline.h5': dataset '/collectives': the chunk of rows 0.. says filters were skipped (mask 0x2), which the writer never does (damaged file?)|report fuzz/hdf5/overread-timeline.h5
2|simtrain: error: layout 'ep=4,pp=2,mbs=400000006,zero=1,recompute=selective': mbs*dp = 400000006*128 = 51200000768 sequences a step is more than 2147483647|gen --model llama3-8b --layout ep=4,pp=2,mbs=400000006,zero=1,recompute=selective --gpus 256 -o TMP/g.json
2|simtrain: error: trace 'bad/kineto_pg_ranks_spaces.json': imported workload is inconsistent: communicator 'pg g': member 1 is rank 1, outside 0..0|run --trace kineto:bad/kineto_pg_ranks_spaces.json --cluster node8
2|simtrain: error: trace 'bad/kineto_pg_config_spaces.json': imported workload is inconsistent: communicator 'pg h': member 1 is rank 1, outside 0..0|run --trace kineto:bad/kineto_pg_config_spaces.json --cluster node8
2|simtrain: error: trace 'bad/kineto_split_negative.json': event 2: 'In split size' entry 0 is -1, below the smallest allowed 0|run --trace kineto:bad/kineto_split_negative.json --cluster node8
2|simtrain: error: trace 'bad/smpi_empty.txt': no actions|run --trace smpi:bad/smpi_empty.txt --cluster node8
2|simtrain: error: trace 'bad/smpi_tag_1e300.txt': line 3: 'send' argument 2 is 1e+300, above the largest allowed 2147483647|run --trace smpi:bad/smpi_tag_1e300.txt --cluster node8
2|simtrain: error: trace 'bad/smpi_rank_huge.txt': line 2: rank is 99999999999, above the largest allowed 1048575|run --trace smpi:bad/smpi_rank_huge.txt --cluster node8
2|simtrain: error: trace 'bad/smpi_root_1e300.txt': line 3: 'bcast' argument 2 is 1e+300, above the largest allowed 1048576|run --trace smpi:bad/smpi_root_1e300.txt --cluster node8
2|simtrain: error: trace 'bad/smpi_rank_gap.txt': rank 1 has no actions (ranks go up to 1048575)|import smpi:bad/smpi_rank_gap.txt -o TMP/a.json
2|simtrain: error: trace 'bad/astra_pp_zero.txt': line 1: 'pp' is 0, below the smallest allowed 1|run --trace astra:bad/astra_pp_zero.txt --gpus 8 --cluster node8
2|simtrain: error: trace 'bad/astra_tp_pp_overflow.txt': 8 GPUs cannot be laid out as tp 65536 x pp 65536 (x dp)|run --trace astra:bad/astra_tp_pp_overflow.txt --gpus 8 --cluster node8
2|simtrain: error: trace 'bad/astra_bytes_1e19.txt': line 3: fwd_bytes is 1e+19, above the largest allowed 9007199254740992|run --trace astra:bad/astra_bytes_1e19.txt --gpus 8 --cluster node8
2|simtrain: error: trace 'bad/astra_layers_1e8.txt': line 2: the number of layers is 100000000, above the largest allowed 65536|run --trace astra:bad/astra_layers_1e8.txt --gpus 8 --cluster node8
1|simtrain: error: trace 'bad/astra_3line.txt': 100000000 GPUs asked for, above the largest allowed 1048576|import astra:bad/astra_3line.txt --gpus 100000000 -o TMP/a.json
2|simtrain: error: model 'bad/model_key_newline.json': key 'lay\nersbad\x1b[31m' is unknown|memory --model bad/model_key_newline.json --layout tp=1,gbs=8 --cluster node8
2|simtrain: error: workload 'bad/wl_ranks_16m.json': 'num_ranks' is 16777216, outside 1..1048576|run --workload bad/wl_ranks_16m.json --cluster node8
2|simtrain: error: workload 'bad/wl_rank_map_64_roles.json': 1048576 ranks x 64 roles is 67108864 rank map entries, above the largest allowed 33554432|run --workload bad/wl_rank_map_64_roles.json --cluster node8
2|simtrain: error: model 'bad/model_layers_1e6.json': 'layers' is 1000000, outside 1..65536|gen --model bad/model_layers_1e6.json --layout tp=1,pp=1,mbs=1,gbs=1 --gpus 1 -o TMP/g.json
2|simtrain: error: spec 'bad/cluster_nodes_1e6.json': 1000000 nodes x 4 GPUs is more than 1048576 GPUs|run --workload ../../examples/pipeline2.json --cluster bad/cluster_nodes_1e6.json
2|simtrain: error: preset 'dgx-h100': 1000000 nodes x 8 GPUs is more than 1048576 GPUs|run --workload ../../examples/pipeline2.json --cluster dgx-h100:1000000
2|simtrain: error: cluster 'dgx-h100:1048577': node count '1048577' is not a whole number in 1..1048576|platform dgx-h100:1048577 --summary
1|simtrain: error: --gpus '100000000' is not a GPU count 1..1048576 (see 'simtrain gen --help')|gen --model llama3-8b --layout tp=8,gbs=1024 --gpus 100000000 -o TMP/g.json
3|simtrain: error: workload 'bad/wl_unmatched_send.json': send from rank 0 to rank 1 on communicator 'pair' (tag 0; op 0 'act' of program 'sender' of rank 0) was never matched by a recv|run --workload bad/wl_unmatched_send.json --cluster node8
3|simtrain: error: workload 'bad/wl_mismatched_sizes.json': collective mismatch on communicator 'world': rank 0 called allreduce of 4 bytes (op 0 'grad_norm' of program 'small'), rank 1 called allreduce of 8 bytes (op 1 'grad_norm' of program 'large')|run --workload bad/wl_mismatched_sizes.json --cluster node8
3|simtrain: error: trace 'smpi:bad/smpi_unmatched_send.txt': send from rank 0 to rank 1 on communicator 'world' (tag 0; op 0 'send' of program 'rank 0' of rank 0) was never matched by a recv|run --trace smpi:bad/smpi_unmatched_send.txt --cluster node8
2|simtrain: error: trace 'bad/kineto_tid_1e300.json': event 2: 'tid' is not a stream number|run --trace kineto:bad/kineto_tid_1e300.json --cluster node8
2|simtrain: error: trace 'bad/kineto_world_1e300.json': distributedInfo: 'world_size' is 1e+300, above the largest allowed 1048576|run --trace kineto:bad/kineto_world_1e300.json --cluster node8
2|simtrain: error: trace 'bad/kineto_corr_1e300.json': event 1: 'correlation' is 1e+300, above the largest allowed 9007199254740992|run --trace kineto:bad/kineto_corr_1e300.json --cluster node8
2|simtrain: error: execution trace 'bad/et_split_negative/rank0_et.json': node 608: split entry 0 is -5, below the smallest allowed 0|run --trace kineto:fuzz/et_kineto_rank0.json --et bad/et_split_negative --cluster node8
2|simtrain: error: spec 'bad/cluster_link_1e308.json': node.intra: 'link_GBps' is 1e+308, above the largest allowed 1000000|platform bad/cluster_link_1e308.json -o TMP/p.xml
2|simtrain: error: spec 'bad/cluster_nic_1e308.json': node.nics: 'Gbps' is 1e+308, above the largest allowed 8000000|run --workload ../../examples/pipeline2.json --cluster bad/cluster_nic_1e308.json
2|simtrain: error: platform 'bad/xml_link_zero.xml': link 'l01': bandwidth 0 B/s is not a positive finite rate|run --workload ../../examples/pipeline2.json --cluster bad/xml_link_zero.xml
2|simtrain: error: platform 'bad/xml_link_negative.xml': link 'l01': bandwidth -5e+09 B/s is not a positive finite rate|run --workload ../../examples/pipeline2.json --cluster bad/xml_link_negative.xml
2|simtrain: error: platform 'bad/xml_link_nan.xml': link 'l01': bandwidth nan B/s is not a positive finite rate|coll allreduce --gpus 2 --bytes 1M --cluster bad/xml_link_nan.xml
2|simtrain: error: platform 'bad/xml_no_routes.xml': line 4: zone 'two' (routing Full) has no route from gpu-0 to gpu-1|run --workload ../../examples/pipeline2.json --cluster bad/xml_no_routes.xml
2|simtrain: error: platform 'bad/xml_one_route_missing.xml': line 4: zone 'two' (routing Full) has no route from gpu-1 to gpu-0|run --workload ../../examples/pipeline2.json --cluster bad/xml_one_route_missing.xml
1|simtrain: error: --cfg 'foo:1': unknown SimGrid setting|run --workload ../../examples/pipeline2.json --cluster node8 --cfg foo:1
1|simtrain: error: --cfg 'surf/precision:abc': bad value for SimGrid setting 'surf/precision': invalid double|run --workload ../../examples/pipeline2.json --cluster node8 --cfg surf/precision:abc
1|simtrain: error: --cfg 'network/model:XX': SimGrid rejects this value of 'network/model'|run --workload ../../examples/pipeline2.json --cluster node8 --cfg network/model:XX
2|simtrain: error: workload 'bad/wl_bytes_1e19.json': programs[0].ops[6]: 'bytes' is 1e+19, above the largest allowed 9007199254740992|run --workload bad/wl_bytes_1e19.json --cluster node8
1|simtrain: error: --bytes '1e19' is 1e+19, above the largest allowed 9007199254740992 (see 'simtrain coll --help')|coll allreduce --gpus 8 --cluster dgx-h100:1 --bytes 1e19
1|simtrain: error: --sweep '1K:1e16' is 1e+16, above the largest allowed 9007199254740992 (see 'simtrain coll --help')|coll allreduce --gpus 8 --cluster dgx-h100:1 --sweep 1K:1e16
2|simtrain: error: model 'wide': program 'stage0': op 'qkv': 'n' is 4500000000, above the largest allowed 2147483647|gen --model bad/model_qkv_2e31.json --layout tp=1,pp=1,mbs=1,gbs=1 --gpus 1 -o TMP/p.xml
EOF
)

n=0
while IFS='|' read -r want_rc want_err args; do
  [ -n "$want_rc" ] || continue
  n=$((n + 1))
  args=${args//TMP/$tmp}
  # shellcheck disable=SC2086
  "$ST" $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  got=$(head -n 1 "$tmp/err")
  [ "$rc" = "$want_rc" ] || fail "simtrain $args: exit $rc, want $want_rc; stderr: $got"
  [ "$got" = "$want_err" ] || fail "simtrain $args: stderr
   got: $got
  want: $want_err"
done <<<"$cases"
[ ! -e "$tmp/p.xml" ] || fail "a rejected platform must not be written"
[ ! -e "$tmp/a.json" ] || fail "a rejected import must not be written"
[ ! -e "$tmp/g.json" ] || fail "a rejected model must not be written"
echo "ok ($n bad inputs)"
