// tests/test_profiler_table.cpp: key_averages() and table() print exactly what PyTorch prints.
//
// Where the golden texts come from:
//   - the first test: the events of the Chrome trace PyTorch 2.11 wrote for the
//     series' part 1 on an H200 (docs/pytorch-reference/torch-2.11-h200-part1-64-bf16-trace.json,
//     GPU annotations moved back by the 1 ns Kineto adds when writing); the text
//     is the table PyTorch printed in that run (torch-2.11-h200-key-averages.txt).
//   - the others: PyTorch's table code (torch/autograd/profiler_util.py:
//     FunctionEvent, key_averages, _build_table) run on the same synthetic events.
#include <doctest/doctest.h>

#include <string>

#include "profiler/key_averages.h"
#include "tests/support/synthetic_events.h"

using ts::profiler::key_averages;
using ts::profiler::TableOptions;
using ts::profiler::unoptimized_build_note;
using ts::testing::SyntheticEvents;

namespace {

// The golden texts start on the line after R"TABLE(.
// A table of a library built without optimization ends with a line saying so (the test build's own).
std::string golden(const char* text) { return std::string(text + 1) + std::string(unoptimized_build_note()); }

TableOptions sorted_by(const char* key) {
  TableOptions o;
  o.sort_by = key;
  return o;
}

}  // namespace

TEST_CASE("profiler table: reproduces PyTorch 2.11's table of part 1 (size 64, bf16, CUDA)") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.step("ProfilerStep#2", 1000, 181185, -1);  // 0
  s.annotation("matmul_add", 19706, 173927, 0);  // 1
  s.op("aten::matmul", 43841, 119946, 1);  // 2
  s.op("aten::mm", 48184, 117196, 2);  // 3
  s.driver("cuLaunchKernelEx", 101659, 115391, 3);  // 4
  s.gpu_annotation("matmul_add", 116297, 148873);  // 5
  s.kernel("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", 116297, 118185, 3);  // 6
  s.op("aten::add", 129986, 147946, 1);  // 7
  s.runtime("cudaLaunchKernel", 140046, 146120, 7);  // 8
  s.kernel("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", 147945, 148873, 7);  // 9
  s.step("ProfilerStep#3", 194623, 265843, -1);  // 10
  s.annotation("matmul_add", 201877, 261382, 10);  // 11
  s.op("aten::matmul", 207073, 237932, 11);  // 12
  s.op("aten::mm", 207952, 237106, 12);  // 13
  s.driver("cuLaunchKernelEx", 226862, 235890, 13);  // 14
  s.gpu_annotation("matmul_add", 237513, 255433);  // 15
  s.kernel("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", 237513, 239401, 13);  // 16
  s.op("aten::add", 240694, 253640, 11);  // 17
  s.runtime("cudaLaunchKernel", 246693, 252256, 17);  // 18
  s.kernel("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", 254441, 255433, 17);  // 19
  s.step("ProfilerStep#4", 276280, 329173, -1);  // 20
  s.annotation("matmul_add", 282070, 324733, 20);  // 21
  s.op("aten::matmul", 285711, 305644, 21);  // 22
  s.op("aten::mm", 286423, 305111, 22);  // 23
  s.driver("cuLaunchKernelEx", 298870, 304169, 23);  // 24
  s.gpu_annotation("matmul_add", 306505, 319369);  // 25
  s.kernel("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", 306505, 308393, 23);  // 26
  s.op("aten::add", 307632, 317193, 21);  // 27
  s.runtime("cudaLaunchKernel", 312148, 316104, 27);  // 28
  s.kernel("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", 318409, 319369, 27);  // 29
  s.runtime("cudaDeviceSynchronize", 357488, 366403, -1);  // 30
  const std::string want = golden(R"TABLE(
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                             matmul_add         0.00%       0.000us         0.00%       0.000us       0.000us      63.360us       741.57%      63.360us      21.120us             3  
                                          ProfilerStep*        15.30%      47.909us        97.15%     304.298us     101.433us       0.000us         0.00%       8.544us       2.848us             3  
                                             matmul_add        28.42%      89.025us        81.86%     256.389us      85.463us       0.000us         0.00%       8.544us       2.848us             3  
                                           aten::matmul         3.21%      10.043us        40.51%     126.897us      42.299us       0.000us         0.00%       5.664us       1.888us             3  
                                               aten::mm        28.35%      88.795us        37.31%     116.854us      38.951us       5.664us        66.29%       5.664us       1.888us             3  
                 nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT         0.00%       0.000us         0.00%       0.000us       0.000us       5.664us        66.29%       5.664us       1.888us             3  
                                              aten::add         7.94%      24.874us        12.92%      40.467us      13.489us       2.880us        33.71%       2.880us       0.960us             3  
void at::native::vectorized_elementwise_kernel<8, at...         0.00%       0.000us         0.00%       0.000us       0.000us       2.880us        33.71%       2.880us       0.960us             3  
                                       cuLaunchKernelEx         8.96%      28.059us         8.96%      28.059us       9.353us       0.000us         0.00%       0.000us       0.000us             3  
                                       cudaLaunchKernel         4.98%      15.593us         4.98%      15.593us       5.198us       0.000us         0.00%       0.000us       0.000us             3  
                                  cudaDeviceSynchronize         2.85%       8.915us         2.85%       8.915us       8.915us       0.000us         0.00%       0.000us       0.000us             1  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 313.213us
Self CUDA time total: 8.544us
)TABLE");
  CHECK(key_averages(s.rec).table("cuda_time_total") == want);
}

TEST_CASE("profiler table: CPU only: columns, sorting, row limit, time unit, top-level rows") {
  SyntheticEvents s;
  s.step("ProfilerStep#2", 1000, 61000, -1);  // 0
  s.annotation("fwd", 2000, 58000, 0);  // 1
  s.op("ts::matmul", 3000, 40000, 1);  // 2
  s.op("ts::mm", 4500, 39000, 2);  // 3
  s.op("ts::add", 41000, 55500, 1);  // 4
  s.step("ProfilerStep#3", 62000, 110000, -1);  // 5
  s.annotation("fwd", 62500, 108000, 5);  // 6
  s.op("ts::matmul", 63000, 90000, 6);  // 7
  s.op("ts::mm", 63400, 89000, 7);  // 8
  s.op("ts::add", 91000, 107000, 6);  // 9
  s.op("ts::t", 111000, 111800, -1);  // 10
  const auto averages = key_averages(s.rec);

  CHECK(averages.table("cpu_time_total") == golden(R"TABLE(
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
    ProfilerStep*         5.97%       6.500us        99.26%     108.000us      54.000us             2  
              fwd         6.43%       7.000us        93.29%     101.500us      50.750us             2  
       ts::matmul         3.58%       3.900us        58.82%      64.000us      32.000us             2  
           ts::mm        55.24%      60.100us        55.24%      60.100us      30.050us             2  
          ts::add        28.03%      30.500us        28.03%      30.500us      15.250us             2  
            ts::t         0.74%       0.800us         0.74%       0.800us       0.800us             1  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 108.800us
)TABLE"));

  // No sort_by: rows in the order their first event started.
  CHECK(averages.table() == golden(R"TABLE(
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
    ProfilerStep*         5.97%       6.500us        99.26%     108.000us      54.000us             2  
              fwd         6.43%       7.000us        93.29%     101.500us      50.750us             2  
       ts::matmul         3.58%       3.900us        58.82%      64.000us      32.000us             2  
           ts::mm        55.24%      60.100us        55.24%      60.100us      30.050us             2  
          ts::add        28.03%      30.500us        28.03%      30.500us      15.250us             2  
            ts::t         0.74%       0.800us         0.74%       0.800us       0.800us             1  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 108.800us
)TABLE"));

  // Percentages are of the sum over every row, printed or not.
  CHECK(averages.table("self_cpu_time_total", 2, 55, "ms") == golden(R"TABLE(
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
           ts::mm        55.24%       0.060ms        55.24%       0.060ms       0.030ms             2  
          ts::add        28.03%       0.030ms        28.03%       0.030ms       0.015ms             2  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 0.109ms
)TABLE"));

  TableOptions top = sorted_by("cpu_time");
  top.top_level_events_only = true;
  top.header = "cpu case";
  CHECK(averages.table(top) == golden(R"TABLE(
=====================================================================================================
cpu case
=====================================================================================================
This report only display top-level ops statistics
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
    ProfilerStep*         5.97%       6.500us        99.26%     108.000us      54.000us             2  
            ts::t         0.74%       0.800us         0.74%       0.800us       0.800us             1  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 108.800us
)TABLE"));
}

TEST_CASE("profiler table: long names are cut to 52 characters + '...', seconds, two threads, dup children fold") {
  SyntheticEvents s;
  s.annotation("a_user_annotation_with_a_rather_long_name_that_goes_on_and_on", 1000, 2501000000, -1);  // 0
  s.op("ts::contiguous", 2000, 2500000000, 0);  // 1
  s.op("ts::contiguous", 3000, 2400000000, 1);  // 2
  s.op("ts::copy_", 4000, 2300000000, 2);  // 3
  s.op("ts::add", 5000, 9000, -1);  // 4
  s.at(4).tid = 2;
  s.op("ts::add", 9500, 12000, -1);  // 5
  s.at(5).tid = 2;
  s.annotation("exactly_fifty_two_characters_long_name_for_the_tests", 20000, 30000, -1);  // 6
  s.at(6).tid = 2;
  const auto averages = key_averages(s.rec);
  CHECK(averages.table("cpu_time_total") == golden(R"TABLE(
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
a_user_annotation_with_a_rather_long_name_that_goes_...         0.04%       1.001ms       100.00%        2.501s        2.501s             1  
                                         ts::contiguous         8.00%     200.002ms        99.96%        2.500s        2.500s             1  
                                              ts::copy_        91.96%        2.300s        91.96%        2.300s        2.300s             1  
exactly_fifty_two_characters_long_name_for_the_tests...         0.00%      10.000us         0.00%      10.000us      10.000us             1  
                                                ts::add         0.00%       6.500us         0.00%       6.500us       3.250us             2  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 2.501s
)TABLE"));
  CHECK(averages.table("count", 100, 30) == golden(R"TABLE(
------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                          Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                       ts::add         0.00%       6.500us         0.00%       6.500us       3.250us             2  
a_user_annotation_with_a_ra...         0.04%       1.001ms       100.00%        2.501s        2.501s             1  
                ts::contiguous         8.00%     200.002ms        99.96%        2.500s        2.500s             1  
                     ts::copy_        91.96%        2.300s        91.96%        2.300s        2.300s             1  
exactly_fifty_two_character...         0.00%      10.000us         0.00%      10.000us      10.000us             1  
------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 2.501s
)TABLE"));
}

TEST_CASE("profiler table: memory columns, rows of memory outside any scope, input shapes") {
  SyntheticEvents s;
  s.rec.profile_memory = true;
  s.rec.record_shapes = true;
  s.memory(500, 4096, -1);  // 0
  s.step("ProfilerStep#0", 1000, 90000, -1);  // 1
  s.at(1).self_cpu_memory = -2048;
  s.op("ts::mm", 2000, 30000, 1);  // 2
  s.inputs(2, {{64, 32}, {32, 16}}, 0);
  s.at(2).self_cpu_memory = 4096;
  s.op("ts::mm", 31000, 50000, 1);  // 3
  s.inputs(3, {{8, 8}, {8, 8}}, 0);
  s.at(3).self_cpu_memory = 256;
  s.op("ts::add", 51000, 60000, 1);  // 4
  s.inputs(4, {{8, 8}, {8}}, 1);
  s.at(4).self_cpu_memory = 256;
  s.op("ts::empty", 61000, 62000, 1);  // 5
  s.inputs(5, {}, 0);
  s.at(5).self_cpu_memory = 3145828;
  s.memory(95000, -1536, -1);  // 6
  s.memory(96000, -5368709120, -1);  // 7
  CHECK(key_averages(s.rec).table() == golden(R"TABLE(
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  Self CPU Mem    # of Calls  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
         [memory]         0.00%       0.000us         0.00%       0.000us       0.000us      -5.00 GB      -5.00 GB             3  
    ProfilerStep*        35.96%      32.000us       100.00%      89.000us      89.000us       3.00 MB      -2.00 KB             1  
           ts::mm        52.81%      47.000us        52.81%      47.000us      23.500us       4.25 KB       4.25 KB             2  
          ts::add        10.11%       9.000us        10.11%       9.000us       9.000us         256 B         256 B             1  
        ts::empty         1.12%       1.000us         1.12%       1.000us       1.000us       3.00 MB       3.00 MB             1  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 89.000us
)TABLE"));
  CHECK(key_averages(s.rec, /*group_by_input_shape=*/true).table("self_cpu_memory_usage") ==
        golden(R"TABLE(
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------------------  
             Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  Self CPU Mem    # of Calls              Input Shapes  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------------------  
        ts::empty         1.12%       1.000us         1.12%       1.000us       1.000us       3.00 MB       3.00 MB             1                        []  
           ts::mm        31.46%      28.000us        31.46%      28.000us      28.000us       4.00 KB       4.00 KB             1      [[64, 32], [32, 16]]  
           ts::mm        21.35%      19.000us        21.35%      19.000us      19.000us         256 B         256 B             1          [[8, 8], [8, 8]]  
          ts::add        10.11%       9.000us        10.11%       9.000us       9.000us         256 B         256 B             1         [[8, 8], [8], []]  
    ProfilerStep*        35.96%      32.000us       100.00%      89.000us      89.000us       3.00 MB      -2.00 KB             1                        []  
         [memory]         0.00%       0.000us         0.00%       0.000us       0.000us      -5.00 GB      -5.00 GB             3                        []  
-----------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------------------  
Self CPU time total: 89.000us
)TABLE"));
}

TEST_CASE("profiler table: FLOPs column and source locations") {
  SyntheticEvents s;
  s.rec.with_stack = true;
  s.annotation("fwd", 1000, 100000, -1);  // 0
  s.at(0).call_site = {"/src/model.cpp", 12, "void forward()"};
  s.op("ts::linear", 2000, 50000, 0);  // 1
  s.at(1).flops = 524288;
  s.at(1).call_site = {"/src/model.cpp", 13, "void forward()"};
  s.op("ts::t", 2500, 3000, 1);  // 2
  s.at(2).call_site = {"/src/model.cpp", 13, "void forward()"};
  s.op("ts::addmm", 3500, 49000, 1);  // 3
  s.at(3).flops = 524288;
  s.at(3).call_site = {"/src/model.cpp", 13, "void forward()"};
  s.op("ts::add", 60000, 61000, 0);  // 4
  s.at(4).flops = 4096;
  s.at(4).call_site = {"/a/very/long/path/to/some/deeply/nested/source/directory/of/the/project/model.cpp", 14, "void forward()"};
  s.op("ts::linear", 110000, 150000, -1);  // 5
  s.at(5).flops = 81920;
  s.at(5).call_site = {"/src/model.cpp", 20, "int main()"};
  s.op("ts::addmm", 111000, 149000, 5);  // 6
  s.at(6).flops = 81920;
  s.at(6).call_site = {"/src/model.cpp", 20, "int main()"};
  s.rec.with_flops = true;
  CHECK(key_averages(s.rec).table("flops") == golden(R"TABLE(
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
          Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  Total KFLOPs  
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
    ts::linear         2.88%       4.000us        63.31%      88.000us      44.000us             2       606.208  
     ts::addmm        60.07%      83.500us        60.07%      83.500us      41.750us             2       606.208  
       ts::add         0.72%       1.000us         0.72%       1.000us       1.000us             1         4.096  
           fwd        35.97%      50.000us        71.22%      99.000us      99.000us             1            --  
         ts::t         0.36%       0.500us         0.36%       0.500us       0.500us             1            --  
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 139.000us
)TABLE"));

  // PyTorch's header names "Source Location" before the FLOPs, while its rows
  // put the FLOPs first: with both columns the two trade places. Kept as is.
  CHECK(key_averages(s.rec, false, /*group_by_stack_n=*/1).table() == golden(R"TABLE(
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  ------------  
          Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  Source Location                                                              Total KFLOPs  
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  ------------  
           fwd        35.97%      50.000us        71.22%      99.000us      99.000us             1  --                                                                           /src/model.cpp(12): void forward()  
                                                                                                                                                                                               
    ts::linear         1.44%       2.000us        34.53%      48.000us      48.000us             1   524.288                                                                     /src/model.cpp(13): void forward()  
                                                                                                                                                                                               
         ts::t         0.36%       0.500us         0.36%       0.500us       0.500us             1  --                                                                           /src/model.cpp(13): void forward()  
                                                                                                                                                                                               
     ts::addmm        32.73%      45.500us        32.73%      45.500us      45.500us             1   524.288                                                                     /src/model.cpp(13): void forward()  
                                                                                                                                                                                               
       ts::add         0.72%       1.000us         0.72%       1.000us       1.000us             1     4.096                                                                     ...ply/nested/source/directory/of/the/project/model.cpp(14): void forward()  
                                                                                                                                                                                               
    ts::linear         1.44%       2.000us        28.78%      40.000us      40.000us             1    81.920                                                                     /src/model.cpp(20): int main()  
                                                                                                                                                                                               
     ts::addmm        27.34%      38.000us        27.34%      38.000us      38.000us             1    81.920                                                                     /src/model.cpp(20): int main()  
                                                                                                                                                                                               
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  ------------  
Self CPU time total: 139.000us
)TABLE"));
  s.rec.with_flops = false;
  CHECK(key_averages(s.rec, false, /*group_by_stack_n=*/1).table() == golden(R"TABLE(
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  
          Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  Source Location                                                              
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  
           fwd        35.97%      50.000us        71.22%      99.000us      99.000us             1  /src/model.cpp(12): void forward()                                           
                                                                                                                                                                                 
    ts::linear         1.44%       2.000us        34.53%      48.000us      48.000us             1  /src/model.cpp(13): void forward()                                           
                                                                                                                                                                                 
         ts::t         0.36%       0.500us         0.36%       0.500us       0.500us             1  /src/model.cpp(13): void forward()                                           
                                                                                                                                                                                 
     ts::addmm        32.73%      45.500us        32.73%      45.500us      45.500us             1  /src/model.cpp(13): void forward()                                           
                                                                                                                                                                                 
       ts::add         0.72%       1.000us         0.72%       1.000us       1.000us             1  ...ply/nested/source/directory/of/the/project/model.cpp(14): void forward()  
                                                                                                                                                                                 
    ts::linear         1.44%       2.000us        28.78%      40.000us      40.000us             1  /src/model.cpp(20): int main()                                               
                                                                                                                                                                                 
     ts::addmm        27.34%      38.000us        27.34%      38.000us      38.000us             1  /src/model.cpp(20): int main()                                               
                                                                                                                                                                                 
--------------  ------------  ------------  ------------  ------------  ------------  ------------  ---------------------------------------------------------------------------  
Self CPU time total: 139.000us
)TABLE"));
}

TEST_CASE("profiler table: CUDA columns, kernels charged to the innermost op, GPU annotation rows") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.rec.profile_memory = true;
  s.step("ProfilerStep#5", 1000, 100000, -1);  // 0
  s.annotation("fwd", 2000, 90000, 0);  // 1
  s.op("ts::linear", 3000, 60000, 1);  // 2
  s.at(2).self_device_memory = 8192;
  s.op("ts::addmm", 4000, 50000, 2);  // 3
  s.at(3).self_cpu_memory = 64;
  s.at(3).self_device_memory = 16384;
  s.op("ts::gelu", 61000, 80000, 1);  // 4
  s.at(4).self_device_memory = 8192;
  s.kernel("void ts_gemm_bf16_128x128_kernel<128, 128, 32>(float const*, float const*, float*, int, int, int)", 30000, 75000, 3);  // 5
  s.kernel("ts_gelu_kernel", 82000, 83500, 4);  // 6
  s.gpu_annotation("fwd", 30000, 83500);  // 7
  CHECK(key_averages(s.rec).table("cuda_time_total") == golden(R"TABLE(
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg       CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                    fwd         0.00%       0.000us         0.00%       0.000us       0.000us      53.500us       115.05%      53.500us      53.500us           0 B           0 B           0 B           0 B             1  
                                          ProfilerStep*        11.11%      11.000us       100.00%      99.000us      99.000us       0.000us         0.00%      46.500us      46.500us          64 B           0 B      32.00 KB           0 B             1  
                                                    fwd        12.12%      12.000us        88.89%      88.000us      88.000us       0.000us         0.00%      46.500us      46.500us          64 B           0 B      32.00 KB           0 B             1  
                                             ts::linear        11.11%      11.000us        57.58%      57.000us      57.000us       0.000us         0.00%      45.000us      45.000us          64 B           0 B      24.00 KB       8.00 KB             1  
                                              ts::addmm        46.46%      46.000us        46.46%      46.000us      46.000us      45.000us        96.77%      45.000us      45.000us          64 B          64 B      16.00 KB      16.00 KB             1  
void ts_gemm_bf16_128x128_kernel<128, 128, 32>(float...         0.00%       0.000us         0.00%       0.000us       0.000us      45.000us        96.77%      45.000us      45.000us           0 B           0 B           0 B           0 B             1  
                                               ts::gelu        19.19%      19.000us        19.19%      19.000us      19.000us       1.500us         3.23%       1.500us       1.500us           0 B           0 B       8.00 KB       8.00 KB             1  
                                         ts_gelu_kernel         0.00%       0.000us         0.00%       0.000us       0.000us       1.500us         3.23%       1.500us       1.500us           0 B           0 B           0 B           0 B             1  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 99.000us
Self CUDA time total: 46.500us
)TABLE"));
  s.rec.profile_memory = false;
  CHECK(key_averages(s.rec).table("self_cuda_time_total", -1) == golden(R"TABLE(
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                    fwd         0.00%       0.000us         0.00%       0.000us       0.000us      53.500us       115.05%      53.500us      53.500us             1  
                                              ts::addmm        46.46%      46.000us        46.46%      46.000us      46.000us      45.000us        96.77%      45.000us      45.000us             1  
void ts_gemm_bf16_128x128_kernel<128, 128, 32>(float...         0.00%       0.000us         0.00%       0.000us       0.000us      45.000us        96.77%      45.000us      45.000us             1  
                                               ts::gelu        19.19%      19.000us        19.19%      19.000us      19.000us       1.500us         3.23%       1.500us       1.500us             1  
                                         ts_gelu_kernel         0.00%       0.000us         0.00%       0.000us       0.000us       1.500us         3.23%       1.500us       1.500us             1  
                                          ProfilerStep*        11.11%      11.000us       100.00%      99.000us      99.000us       0.000us         0.00%      46.500us      46.500us             1  
                                                    fwd        12.12%      12.000us        88.89%      88.000us      88.000us       0.000us         0.00%      46.500us      46.500us             1  
                                             ts::linear        11.11%      11.000us        57.58%      57.000us      57.000us       0.000us         0.00%      45.000us      45.000us             1  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 99.000us
Self CUDA time total: 46.500us
)TABLE"));
}

// The library and this test are compiled with the same flags: optimized, no note; -O0 (the debug
// preset), a note that names the build type and how to build for measuring.
TEST_CASE("profiler table: a library compiled without optimization says so under its table") {
  SyntheticEvents s;
  s.op("ts::add", 1000, 2000, -1);
  const std::string table = key_averages(s.rec).table();
#if defined(__OPTIMIZE__)
  CHECK(unoptimized_build_note().empty());
  CHECK(table.find("\nBuild: ") == std::string::npos);
#else
  const std::string note(unoptimized_build_note());
  CHECK(note.starts_with("Build: this tensorscope library was compiled without optimization (build type "));
  CHECK(note.find("RelWithDebInfo") != std::string::npos);
  CHECK(table.ends_with(note));
#endif
}
