// tensor/device.h: where a tensor's bytes live: cpu, or cuda:N.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

enum class DeviceType : uint8_t { cpu, cuda };
constexpr int kDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // cuda:N; always 0 for cpu

  constexpr bool is_cpu() const { return type == DeviceType::cpu; }
  constexpr bool is_cuda() const { return type == DeviceType::cuda; }
  constexpr bool operator==(const Device&) const = default;

  std::string str() const;  // "cpu", "cuda:0"

  // Parses "cpu", "cuda", "cuda:1"; throws ts::Error otherwise.
  static Device parse(std::string_view text);
};

constexpr Device kCPU{DeviceType::cpu, 0};
constexpr Device kCUDA{DeviceType::cuda, 0};

constexpr const char* device_type_name(DeviceType type) { return type == DeviceType::cpu ? "cpu" : "cuda"; }

}  // namespace ts
