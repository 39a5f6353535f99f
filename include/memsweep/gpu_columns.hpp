#pragma once
// GPU memory's columns, declared once (measurement_source.hpp). The rows'
// fields are in include/memsweep/results.hpp (SampleRow, TrialRow); the
// schema (src/store/schema.cpp), export (src/cli/export_tables.cpp) and the
// analysis loader (analysis/memsweep_analysis/load.py, through the tables'
// unit attributes) take names, units and versions from here.

#include "memsweep/measurement_source.hpp"

#include <array>

namespace memsweep::gpu {

inline constexpr int kGpuSchemaVersion = 7;

// /samples
inline constexpr SourceColumn kSampleGpuUsed{
    "gpu_used",
    "gpu_used_bytes",
    "bytes",
    SourceColumnKind::level,
    kGpuSchemaVersion,
    "NVML: every visible device's used memory, summed, on the sampler's cadence (other processes' included)"};
inline constexpr SourceColumn kSampleGpuTreeUsed{
    "gpu_tree_used",
    "gpu_tree_used_bytes",
    "bytes",
    SourceColumnKind::level,
    kGpuSchemaVersion,
    "NVML: the trial's process tree's used GPU memory, the last per-process read (every 100 ms or slower)"};
inline constexpr std::array kSampleColumns{kSampleGpuUsed, kSampleGpuTreeUsed};

// /trials
inline constexpr SourceColumn kTrialGpuPeak{
    "gpu_peak",        "gpu_peak_bytes",
    "bytes",           SourceColumnKind::level,
    kGpuSchemaVersion, "NVML: the tree's largest per-process total, else the devices' rise above the trial's start"};
inline constexpr SourceColumn kTrialGpuDevices{
    "gpu_devices",           "gpu_devices",     "text",
    SourceColumnKind::level, kGpuSchemaVersion, "NVML indices of the devices the trial used, \"0,2\""};
inline constexpr SourceColumn kTrialGpuPeakSource{
    "gpu_peak_source",       "gpu_peak_source", "text",
    SourceColumnKind::level, kGpuSchemaVersion, "\"tree\" or \"device_delta\"; empty: not measured"};
inline constexpr SourceColumn kTrialTorchAllocatedPeak{"torch_allocated_peak",
                                                       "torch_allocated_peak_bytes",
                                                       "bytes",
                                                       SourceColumnKind::level,
                                                       kGpuSchemaVersion,
                                                       "the program's events line: torch.cuda.max_memory_allocated()"};
inline constexpr SourceColumn kTrialTorchReservedPeak{"torch_reserved_peak",
                                                      "torch_reserved_peak_bytes",
                                                      "bytes",
                                                      SourceColumnKind::level,
                                                      kGpuSchemaVersion,
                                                      "the program's events line: torch.cuda.max_memory_reserved()"};

}  // namespace memsweep::gpu
