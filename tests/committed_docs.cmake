# tests/committed_docs.cmake: the committed outputs under docs/ read again by today's tools: every
# trace passes ts_trace_check (and Holistic Trace Analysis for the profiler's), every committed
# table equals ts_trace_diff's reading of its trace, every committed picture is what ts_trace_svg
# draws today, and the memory charts' peaks are what the tutorial's shapes allocate.
# Included by the top-level CMakeLists.txt, where the tools' targets are defined.
set(h200 ${PROJECT_SOURCE_DIR}/docs/h200-runs)
# Tutorial 01's cold traces on the H200 (CUPTI's synchronization records included): our checker and
# Holistic Trace Analysis read them here, without a GPU; HTA's kernel breakdown must match.
foreach(trace 4096_bf16_cold_eager 64_bf16_cold_eager)
  add_test(NAME h200_trace_check_${trace} COMMAND ts_trace_check ${h200}/01_matmul_add/${trace}.json --steps 3)
  add_test(NAME h200_trace_hta_${trace}
    COMMAND python3 ${PROJECT_SOURCE_DIR}/tools/hta_check.py --gpu-trace ${h200}/01_matmul_add/${trace}.json
            --venv ${CMAKE_BINARY_DIR}/hta-venv)
  # One venv for all HTA tests: the first creates it.
  set_tests_properties(h200_trace_hta_${trace} PROPERTIES DEPENDS hta_check TIMEOUT 1800 SKIP_RETURN_CODE 77)
endforeach()
# ts_trace_svg, ts_trace_diff and the committed pictures (tests/test_trace_tools.py says what each case checks).
set(trace_tools_test python3 ${PROJECT_SOURCE_DIR}/tests/test_trace_tools.py)
set(mlp ${h200}/03_mlp/64x128x768x3072_bf16_warm)
foreach(path eager fused merged)
  add_test(NAME trace_svg_03_mlp_${path}_step3
    COMMAND ${trace_tools_test} svg --tool $<TARGET_FILE:ts_trace_svg> --step 3 --trace ${mlp}_${path}.json)
endforeach()
add_test(NAME trace_svg_01_cold_whole
  COMMAND ${trace_tools_test} svg --tool $<TARGET_FILE:ts_trace_svg> --trace ${h200}/01_matmul_add/4096_bf16_cold_eager.json)
add_test(NAME trace_svg_01_active20_window
  COMMAND ${trace_tools_test} svg --tool $<TARGET_FILE:ts_trace_svg> --step 7 --from-us 10 --to-us 300
          --trace ${h200}/01_matmul_add_active20/4096_bf16_warm_eager.json)
# A CUDA graph replay: one launch call with an arrow to each of its kernels (flow ids correlation + k * 2^32).
add_test(NAME trace_svg_06_graph_replay_step3
  COMMAND ${trace_tools_test} svg --tool $<TARGET_FILE:ts_trace_svg> --step 3
          --trace ${h200}/06_cuda_graphs/traces/64_bf16_warm_step_graph.json)
add_test(NAME trace_svg_errors COMMAND ${trace_tools_test} svg-errors --tool $<TARGET_FILE:ts_trace_svg> --trace ${mlp}_eager.json)
add_test(NAME trace_diff_self COMMAND ${trace_tools_test} diff-self --tool $<TARGET_FILE:ts_trace_diff> --trace ${mlp}_eager.json)
add_test(NAME trace_diff_03_mlp_eager_vs_fused
  COMMAND ${trace_tools_test} diff-fusion --tool $<TARGET_FILE:ts_trace_diff> --before ${mlp}_eager.json --after ${mlp}_fused.json)
add_test(NAME trace_diff_errors COMMAND ${trace_tools_test} diff-errors --tool $<TARGET_FILE:ts_trace_diff> --trace ${mlp}_eager.json)
# Files no tool wrote (wrong field types, deep nesting, gzip bombs, /dev/zero, a FIFO, a directory) and
# out-of-range numeric options: one line and an exit status from each tool, never a signal.
foreach(tool ts_trace_check ts_trace_diff ts_trace_svg)
  add_test(NAME trace_hostile_${tool} COMMAND ${trace_tools_test} hostile --tool $<TARGET_FILE:${tool}> --trace ${mlp}_eager.json)
endforeach()
# Every table tutorials 00-03 wrote on the H200 (their folders and hopper/) beside its trace (<config>.txt beside <config>.json)
# against the diff's reading of that trace (tutorial 04's below).
file(GLOB h200_tables RELATIVE ${h200} ${h200}/0[0-3]_*/*.txt ${h200}/hopper/*.txt)
foreach(table ${h200_tables})
  string(REGEX REPLACE "\\.txt$" "" run ${table})
  if(run MATCHES "\\.(steps|kernels|check|out)$" OR NOT EXISTS ${h200}/${run}.json)
    continue()
  endif()
  string(REPLACE "/" "__" name ${run})
  add_test(NAME trace_diff_table_${name}
    COMMAND ${trace_tools_test} diff-table --tool $<TARGET_FILE:ts_trace_diff> --trace ${h200}/${run}.json
            --table ${h200}/${table})
endforeach()
add_test(NAME render_pictures
  COMMAND ${trace_tools_test} pictures --tool $<TARGET_FILE:ts_trace_svg>
          --script ${PROJECT_SOURCE_DIR}/tools/render_pictures.sh --root ${PROJECT_SOURCE_DIR}
          --docs ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/tutorials/00_tensors_and_views.md
                 ${PROJECT_SOURCE_DIR}/tutorials/01_matmul_add.md ${PROJECT_SOURCE_DIR}/tutorials/02_linear.md
                 ${PROJECT_SOURCE_DIR}/tutorials/03_mlp.md ${PROJECT_SOURCE_DIR}/tutorials/reading_a_trace.md)
add_test(NAME trace_diff_readme_quote
  COMMAND ${trace_tools_test} quote --tool $<TARGET_FILE:ts_trace_diff> --root ${PROJECT_SOURCE_DIR}
          --output ${h200}/03_mlp/trace_diff_eager_vs_fused.txt --readme ${PROJECT_SOURCE_DIR}/README.md)
# ts_ladder on the CPU: the tables print and every rung matches its reference (exit status 0);
# tests/test_ladder.cpp checks --list, the no-GPU refusal, the comparison itself and the README quotes.
add_test(NAME ladder_cpu_mm COMMAND ts_ladder --op mm --device cpu --runs 5 --warmup 1)
add_test(NAME ladder_cpu_add COMMAND ts_ladder --op add --device cpu --runs 5 --warmup 1)
add_test(NAME ladder_cpu_all COMMAND ts_ladder --all --device cpu --runs 3 --warmup 1)
add_test(NAME ladder_roofline_pictures COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/test_roofline.py --root ${PROJECT_SOURCE_DIR})
# Tutorial 04's H200 traces (docs/h200-runs/04_attention/traces): every one passes the checker, and
# each table printed whole (the naive and math ones stop at 25 rows) equals the diff's reading of its trace.
set(h200_04 ${PROJECT_SOURCE_DIR}/docs/h200-runs/04_attention/traces)
foreach(path naive inplace math flash_v1 flash_v2 flash_v3 naive_noncausal)
  add_test(NAME h200_trace_check_04_attention_${path}
    COMMAND ts_trace_check ${h200_04}/4x16x1024x64_bf16_warm_${path}.json --steps 3)
endforeach()
foreach(path inplace flash_v1 flash_v2 flash_v3 naive_noncausal)
  add_test(NAME trace_diff_table_04_attention_${path}
    COMMAND ${trace_tools_test} diff-table --tool $<TARGET_FILE:ts_trace_diff>
            --trace ${h200_04}/4x16x1024x64_bf16_warm_${path}.json --table ${h200_04}/4x16x1024x64_bf16_warm_${path}.txt)
endforeach()

# Tutorial 05's committed runs (docs/h200-runs/05_memory_and_syncs, docs/cpu-runs/05_memory_and_syncs): every
# trace passes the checker; ts_trace_svg --memory's charts recomputed from the memory traces by
# tests/test_trace_memory.py, a step's peak (--expect-peak-rule) being the forward's allocations plus the
# previous step's output, as many [T, H] and [T, D] tensors as its PEAK_TENSORS says, at the shape the
# trace's name gives; the committed pictures are what the tool draws today.
set(t05_memory_test python3 ${PROJECT_SOURCE_DIR}/tests/test_trace_memory.py)
foreach(run h200 cpu)
  set(dir ${PROJECT_SOURCE_DIR}/docs/${run}-runs/05_memory_and_syncs)
  file(GLOB t05_traces RELATIVE ${dir}/traces ${dir}/traces/*.json)
  foreach(trace ${t05_traces})
    string(REGEX REPLACE "\\.json$" "" name ${trace})
    add_test(NAME trace_check_05_${run}_${name} COMMAND ts_trace_check ${dir}/traces/${trace} --steps 3)
  endforeach()
  file(GLOB t05_pictures RELATIVE ${dir}/pictures ${dir}/pictures/*.svg)
  foreach(picture ${t05_pictures})
    # <trace>_step<N>_memory.svg, <trace>_memory.svg (the whole trace) or <trace>_step<N>.svg (a timeline).
    string(REGEX MATCH "^(.*)_step([0-9]+)(_memory)?\\.svg$" step_match ${picture})
    set(args)
    if(step_match)
      set(trace ${CMAKE_MATCH_1})
      list(APPEND args --step ${CMAKE_MATCH_2})
      if(CMAKE_MATCH_3)
        list(APPEND args --memory)
      endif()
    else()
      string(REGEX REPLACE "_memory\\.svg$" "" trace ${picture})
      list(APPEND args --memory)
    endif()
    string(REGEX REPLACE "\\.svg$" "" name ${picture})
    add_test(NAME trace_picture_05_${run}_${name}
      COMMAND ${t05_memory_test} picture --tool $<TARGET_FILE:ts_trace_svg> --trace ${dir}/traces/${trace}.json
              --svg ${dir}/pictures/${picture} ${args})
  endforeach()
endforeach()
set(h200_05 ${PROJECT_SOURCE_DIR}/docs/h200-runs/05_memory_and_syncs/traces/64x128x768x3072_bf16)
set(cpu_05 ${PROJECT_SOURCE_DIR}/docs/cpu-runs/05_memory_and_syncs/traces/8x128x768x3072_bf16)
foreach(cache "" _nocache)
  add_test(NAME trace_memory_05_h200_eager${cache}_step3 COMMAND ${t05_memory_test} chart --tool $<TARGET_FILE:ts_trace_svg>
           --trace ${h200_05}_warm_memory_eager${cache}.json --step 3 --expect-peak-rule)
  foreach(path fused merged)
    add_test(NAME trace_memory_05_h200_${path}${cache}_step3 COMMAND ${t05_memory_test} chart --tool $<TARGET_FILE:ts_trace_svg>
             --trace ${h200_05}_warm_memory_${path}${cache}.json --step 3 --expect-peak-rule)
  endforeach()
  # The first forward of the process: no earlier output to free.
  add_test(NAME trace_memory_05_h200_first_forwards${cache}_step0 COMMAND ${t05_memory_test} chart
           --tool $<TARGET_FILE:ts_trace_svg> --trace ${h200_05}_first_forwards_eager${cache}_wait0_warmup0.json --step 0
           --expect-peak-rule)
  add_test(NAME trace_memory_05_h200_first_forwards${cache}_whole COMMAND ${t05_memory_test} chart
           --tool $<TARGET_FILE:ts_trace_svg> --trace ${h200_05}_first_forwards_eager${cache}_wait0_warmup0.json)
endforeach()
add_test(NAME trace_memory_05_h200_eager_window COMMAND ${t05_memory_test} chart --tool $<TARGET_FILE:ts_trace_svg>
         --trace ${h200_05}_warm_memory_eager.json --step 3 --from-us 20 --to-us 150)
add_test(NAME trace_memory_05_cpu_eager_step3 COMMAND ${t05_memory_test} chart --tool $<TARGET_FILE:ts_trace_svg>
         --trace ${cpu_05}_warm_memory_eager.json --step 3 --expect-peak-rule)
foreach(path fused merged)
  add_test(NAME trace_memory_05_cpu_${path}_step3 COMMAND ${t05_memory_test} chart --tool $<TARGET_FILE:ts_trace_svg>
           --trace ${cpu_05}_warm_memory_${path}.json --step 3 --expect-peak-rule)
endforeach()
add_test(NAME trace_memory_05_errors COMMAND ${t05_memory_test} errors --tool $<TARGET_FILE:ts_trace_svg>
         --trace ${h200_05}_warm_memory_eager.json --no-memory-trace ${h200_05}_warm_syncs_none.json)

# Every committed trace, table and log names only ts:: names and rungs the code defines; every file
# under docs/ is named by a page, a test, a script, another output or a README there (docs/README.md
# is the index); every relative link and anchor of every tracked page leads somewhere; the checks
# themselves, on a made-up tree.
foreach(case names named links pages self)
  add_test(NAME docs_${case} COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/test_docs.py ${PROJECT_SOURCE_DIR} ${case})
endforeach()
