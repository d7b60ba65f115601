// Test support: run a program on the reference interpreter and generate inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ir/Program.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Interpreter.h"

namespace quantc::tests {

template <class T>
runtime::HostBuffer host(ir::ScalarType element, const std::vector<T>& values) {
  return runtime::HostBuffer::from(element, values);
}

/// Runs `program` on the reference interpreter with `inputs` (every output buffer
/// zero-filled) and returns buffer `output` reinterpreted as T.
template <class T>
std::vector<T> run_reference(const ir::Program& program, const runtime::BufferSet& inputs,
                             const std::string& output = "out") {
  runtime::BufferSet buffers = runtime::allocate_buffers(program);
  for (const auto& [name, buffer] : inputs) buffers[name] = buffer;
  runtime::reference::run(program, buffers);
  return buffers.at(output).as<T>();
}

inline std::vector<std::uint32_t> random_words(std::mt19937& engine, std::size_t count) {
  std::vector<std::uint32_t> words(count);
  for (auto& word : words) word = static_cast<std::uint32_t>(engine());
  return words;
}

inline std::vector<float> random_floats(std::mt19937& engine, std::size_t count, float low = -1.0f,
                                        float high = 1.0f) {
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (auto& value : values) value = distribution(engine);
  return values;
}

template <class Byte>
std::vector<Byte> random_bytes(std::mt19937& engine, std::size_t count) {
  std::vector<Byte> bytes(count);
  for (auto& byte : bytes) byte = static_cast<Byte>(engine() & 0xFF);
  return bytes;
}

inline std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// Bit-for-bit equality, except that any NaN equals any NaN.
inline bool same_bits(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b); }

}  // namespace quantc::tests
