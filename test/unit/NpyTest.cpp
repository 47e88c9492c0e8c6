//===- NpyTest.cpp - Reading and writing NumPy .npy and .npz files --------===//
//
// Round trips of every supported dtype, files written by NumPy 1.24 (embedded
// below as bytes), and rejection of corrupt or unsupported input with a
// message that names the problem.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Npy.h"
#include "trnrt/Numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace trnrt;

namespace {

// Written by NumPy 1.24.2 with
//   np.savez(f, half=np.array([1.5, -2, 65504], dtype='<f2'),
//            flags=np.array([[True, False]]),
//            big=np.array([0.1, -3.0], dtype='>f8'),
//            fort=np.asfortranarray(np.arange(6, dtype='<u2').reshape(2, 3)))
// and the same with np.savez_compressed; kTruncatedEntryNpz is a zip (Python's
// zipfile) whose entry x.npy has a header for 64 <f4 but only 100 data bytes.
const uint8_t kNumpySavez[] = {
    0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x21, 0x00, 0xe8, 0x18, 0x6d, 0xc1, 0x86, 0x00, 0x00, 0x00, 0x86, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x14, 0x00, 0x68, 0x61, 0x6c, 0x66, 0x2e, 0x6e,
    0x70, 0x79, 0x01, 0x00, 0x10, 0x00, 0x86, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x86, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x93, 0x4e,
    0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x32, 0x27, 0x2c,
    0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72,
    0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c,
    0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x33,
    0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x3e, 0x00, 0xc0, 0xff, 0x7b,
    0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x21, 0x00, 0x10, 0x19, 0x3a, 0x19, 0x82, 0x00, 0x00, 0x00, 0x82, 0x00,
    0x00, 0x00, 0x09, 0x00, 0x14, 0x00, 0x66, 0x6c, 0x61, 0x67, 0x73, 0x2e,
    0x6e, 0x70, 0x79, 0x01, 0x00, 0x10, 0x00, 0x82, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x82, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x93,
    0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64,
    0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x7c, 0x62, 0x31, 0x27,
    0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f,
    0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65,
    0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28,
    0x31, 0x2c, 0x20, 0x32, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x01, 0x00, 0x50, 0x4b, 0x03,
    0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x91,
    0x54, 0x3c, 0xb6, 0x90, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x07,
    0x00, 0x14, 0x00, 0x62, 0x69, 0x67, 0x2e, 0x6e, 0x70, 0x79, 0x01, 0x00,
    0x10, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x90, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59,
    0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63, 0x72, 0x27,
    0x3a, 0x20, 0x27, 0x3e, 0x66, 0x38, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27,
    0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68,
    0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x29, 0x2c, 0x20,
    0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x0a, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a, 0xc0, 0x08,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50, 0x4b, 0x03, 0x04, 0x14, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x77, 0x1d, 0x8f, 0x1f,
    0x8c, 0x00, 0x00, 0x00, 0x8c, 0x00, 0x00, 0x00, 0x08, 0x00, 0x14, 0x00,
    0x66, 0x6f, 0x72, 0x74, 0x2e, 0x6e, 0x70, 0x79, 0x01, 0x00, 0x10, 0x00,
    0x8c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8c, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00,
    0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20,
    0x27, 0x3c, 0x75, 0x32, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20,
    0x54, 0x72, 0x75, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65,
    0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20, 0x33, 0x29, 0x2c, 0x20, 0x7d,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x04, 0x00, 0x02, 0x00, 0x05, 0x00,
    0x50, 0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x21, 0x00, 0xe8, 0x18, 0x6d, 0xc1, 0x86, 0x00, 0x00, 0x00,
    0x86, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x68, 0x61,
    0x6c, 0x66, 0x2e, 0x6e, 0x70, 0x79, 0x50, 0x4b, 0x01, 0x02, 0x14, 0x03,
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x10, 0x19,
    0x3a, 0x19, 0x82, 0x00, 0x00, 0x00, 0x82, 0x00, 0x00, 0x00, 0x09, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x01,
    0xc0, 0x00, 0x00, 0x00, 0x66, 0x6c, 0x61, 0x67, 0x73, 0x2e, 0x6e, 0x70,
    0x79, 0x50, 0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x21, 0x00, 0x91, 0x54, 0x3c, 0xb6, 0x90, 0x00, 0x00,
    0x00, 0x90, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x01, 0x7d, 0x01, 0x00, 0x00, 0x62,
    0x69, 0x67, 0x2e, 0x6e, 0x70, 0x79, 0x50, 0x4b, 0x01, 0x02, 0x14, 0x03,
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x77, 0x1d,
    0x8f, 0x1f, 0x8c, 0x00, 0x00, 0x00, 0x8c, 0x00, 0x00, 0x00, 0x08, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x01,
    0x46, 0x02, 0x00, 0x00, 0x66, 0x6f, 0x72, 0x74, 0x2e, 0x6e, 0x70, 0x79,
    0x50, 0x4b, 0x05, 0x06, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x04, 0x00,
    0xd8, 0x00, 0x00, 0x00, 0x0c, 0x03, 0x00, 0x00, 0x00, 0x00};

const uint8_t kNumpySavezCompressed[] = {
    0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x21, 0x00, 0xe8, 0x18, 0x6d, 0xc1, 0x4a, 0x00, 0x00, 0x00, 0x86, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x14, 0x00, 0x68, 0x61, 0x6c, 0x66, 0x2e, 0x6e,
    0x70, 0x79, 0x01, 0x00, 0x10, 0x00, 0x86, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x4a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9b, 0xec,
    0x17, 0xea, 0x1b, 0x10, 0xc9, 0xc8, 0x50, 0xc6, 0x50, 0xad, 0x9e, 0x92,
    0x5a, 0x9c, 0x5c, 0xa4, 0x6e, 0xa5, 0xa0, 0x6e, 0x93, 0x66, 0xa4, 0xae,
    0xa3, 0xa0, 0x9e, 0x96, 0x5f, 0x54, 0x52, 0x94, 0x98, 0x17, 0x9f, 0x5f,
    0x94, 0x92, 0x0a, 0x12, 0x77, 0x4b, 0xcc, 0x29, 0x4e, 0x05, 0x8a, 0x17,
    0x67, 0x24, 0x16, 0xa4, 0x02, 0xf9, 0x1a, 0xc6, 0x3a, 0x9a, 0x3a, 0x0a,
    0xb5, 0x0a, 0x14, 0x00, 0x2e, 0x06, 0x3b, 0x86, 0x03, 0xff, 0xab, 0x01,
    0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x21, 0x00, 0x10, 0x19, 0x3a, 0x19, 0x48, 0x00, 0x00, 0x00, 0x82, 0x00,
    0x00, 0x00, 0x09, 0x00, 0x14, 0x00, 0x66, 0x6c, 0x61, 0x67, 0x73, 0x2e,
    0x6e, 0x70, 0x79, 0x01, 0x00, 0x10, 0x00, 0x82, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9b,
    0xec, 0x17, 0xea, 0x1b, 0x10, 0xc9, 0xc8, 0x50, 0xc6, 0x50, 0xad, 0x9e,
    0x92, 0x5a, 0x9c, 0x5c, 0xa4, 0x6e, 0xa5, 0xa0, 0x5e, 0x93, 0x64, 0xa8,
    0xae, 0xa3, 0xa0, 0x9e, 0x96, 0x5f, 0x54, 0x52, 0x94, 0x98, 0x17, 0x9f,
    0x5f, 0x94, 0x92, 0x0a, 0x12, 0x77, 0x4b, 0xcc, 0x29, 0x4e, 0x05, 0x8a,
    0x17, 0x67, 0x24, 0x16, 0xa4, 0x02, 0xf9, 0x1a, 0x86, 0x3a, 0x0a, 0x46,
    0x9a, 0x3a, 0x0a, 0xb5, 0x0a, 0x64, 0x03, 0x2e, 0x46, 0x06, 0x00, 0x50,
    0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x21,
    0x00, 0x91, 0x54, 0x3c, 0xb6, 0x4f, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00,
    0x00, 0x07, 0x00, 0x14, 0x00, 0x62, 0x69, 0x67, 0x2e, 0x6e, 0x70, 0x79,
    0x01, 0x00, 0x10, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x4f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9b, 0xec, 0x17, 0xea,
    0x1b, 0x10, 0xc9, 0xc8, 0x50, 0xc6, 0x50, 0xad, 0x9e, 0x92, 0x5a, 0x9c,
    0x5c, 0xa4, 0x6e, 0xa5, 0xa0, 0x6e, 0x97, 0x66, 0xa1, 0xae, 0xa3, 0xa0,
    0x9e, 0x96, 0x5f, 0x54, 0x52, 0x94, 0x98, 0x17, 0x9f, 0x5f, 0x94, 0x92,
    0x0a, 0x12, 0x77, 0x4b, 0xcc, 0x29, 0x4e, 0x05, 0x8a, 0x17, 0x67, 0x24,
    0x16, 0xa4, 0x02, 0xf9, 0x1a, 0x46, 0x3a, 0x9a, 0x3a, 0x0a, 0xb5, 0x0a,
    0x14, 0x00, 0x2e, 0xfb, 0x9d, 0x33, 0x41, 0x60, 0xd6, 0x01, 0x0e, 0x06,
    0x30, 0x00, 0x00, 0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08,
    0x00, 0x00, 0x00, 0x21, 0x00, 0x77, 0x1d, 0x8f, 0x1f, 0x51, 0x00, 0x00,
    0x00, 0x8c, 0x00, 0x00, 0x00, 0x08, 0x00, 0x14, 0x00, 0x66, 0x6f, 0x72,
    0x74, 0x2e, 0x6e, 0x70, 0x79, 0x01, 0x00, 0x10, 0x00, 0x8c, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x51, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x9b, 0xec, 0x17, 0xea, 0x1b, 0x10, 0xc9, 0xc8, 0x50, 0xc6, 0x50,
    0xad, 0x9e, 0x92, 0x5a, 0x9c, 0x5c, 0xa4, 0x6e, 0xa5, 0xa0, 0x6e, 0x53,
    0x6a, 0xa4, 0xae, 0xa3, 0xa0, 0x9e, 0x96, 0x5f, 0x54, 0x52, 0x94, 0x98,
    0x17, 0x9f, 0x5f, 0x94, 0x92, 0x0a, 0x12, 0x0f, 0x29, 0x2a, 0x4d, 0x05,
    0x0a, 0x17, 0x67, 0x24, 0x16, 0xa4, 0x02, 0xb9, 0x1a, 0x46, 0x3a, 0x0a,
    0xc6, 0x9a, 0x3a, 0x0a, 0xb5, 0x0a, 0xe4, 0x03, 0x2e, 0x06, 0x06, 0x66,
    0x06, 0x46, 0x06, 0x16, 0x06, 0x26, 0x06, 0x56, 0x06, 0x00, 0x50, 0x4b,
    0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x21, 0x00, 0xe8, 0x18, 0x6d, 0xc1, 0x4a, 0x00, 0x00, 0x00, 0x86, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x68, 0x61, 0x6c, 0x66,
    0x2e, 0x6e, 0x70, 0x79, 0x50, 0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x21, 0x00, 0x10, 0x19, 0x3a, 0x19,
    0x48, 0x00, 0x00, 0x00, 0x82, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x01, 0x84, 0x00,
    0x00, 0x00, 0x66, 0x6c, 0x61, 0x67, 0x73, 0x2e, 0x6e, 0x70, 0x79, 0x50,
    0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00,
    0x00, 0x21, 0x00, 0x91, 0x54, 0x3c, 0xb6, 0x4f, 0x00, 0x00, 0x00, 0x90,
    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x80, 0x01, 0x07, 0x01, 0x00, 0x00, 0x62, 0x69, 0x67,
    0x2e, 0x6e, 0x70, 0x79, 0x50, 0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x21, 0x00, 0x77, 0x1d, 0x8f, 0x1f,
    0x51, 0x00, 0x00, 0x00, 0x8c, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x01, 0x8f, 0x01,
    0x00, 0x00, 0x66, 0x6f, 0x72, 0x74, 0x2e, 0x6e, 0x70, 0x79, 0x50, 0x4b,
    0x05, 0x06, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x04, 0x00, 0xd8, 0x00,
    0x00, 0x00, 0x1a, 0x02, 0x00, 0x00, 0x00, 0x00};

const uint8_t kTruncatedEntryNpz[] = {
    0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xb1,
    0x74, 0x5d, 0xdd, 0x0c, 0xfb, 0x04, 0xe4, 0x00, 0x00, 0x00, 0xe4, 0x00,
    0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x78, 0x2e, 0x6e, 0x70, 0x79, 0x93,
    0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64,
    0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27,
    0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f,
    0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65,
    0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28,
    0x36, 0x34, 0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50,
    0x4b, 0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0,
    0xb1, 0x74, 0x5d, 0xdd, 0x0c, 0xfb, 0x04, 0xe4, 0x00, 0x00, 0x00, 0xe4,
    0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x78, 0x2e, 0x6e,
    0x70, 0x79, 0x50, 0x4b, 0x05, 0x06, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x01, 0x00, 0x33, 0x00, 0x00, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00, 0x00};

/// A .npy file with the given header text, written by hand (no padding, so
/// the parser's tolerance of unaligned headers is exercised too).
std::vector<uint8_t> makeNpy(const std::string &header,
                             const std::vector<uint8_t> &data,
                             unsigned major = 1) {
  std::vector<uint8_t> bytes = {0x93,           'N', 'U', 'M', 'P', 'Y',
                                uint8_t(major), 0};
  size_t lengthSize = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lengthSize; ++i)
    bytes.push_back(uint8_t(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string dictFor(const std::string &descr, const std::string &shape,
                    bool fortran = false) {
  return "{'descr': '" + descr +
         "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }\n";
}

bool parse(const std::vector<uint8_t> &bytes, NpyArray &out,
           std::string &error) {
  return parseNpy(bytes.data(), bytes.size(), out, error);
}

/// Expects parsing to fail with a one-line message containing every one of
/// `keywords`.
void expectParseError(const std::vector<uint8_t> &bytes,
                      std::vector<std::string> keywords) {
  NpyArray array;
  std::string error;
  ASSERT_FALSE(parse(bytes, array, error));
  EXPECT_EQ(std::string::npos, error.find('\n')) << error;
  for (const std::string &keyword : keywords)
    EXPECT_NE(std::string::npos, error.find(keyword))
        << "'" << keyword << "' not in: " << error;
}

struct DTypeCase {
  char kind;
  unsigned itemSize;
  const char *descr;
};

const DTypeCase kAllDTypes[] = {
    {'f', 2, "<f2"}, {'f', 4, "<f4"}, {'f', 8, "<f8"}, {'i', 1, "|i1"},
    {'i', 2, "<i2"}, {'i', 4, "<i4"}, {'i', 8, "<i8"}, {'u', 1, "|u1"},
    {'u', 2, "<u2"}, {'u', 4, "<u4"}, {'u', 8, "<u8"}, {'b', 1, "|b1"},
};

/// A 2x3 array of the dtype with values that exercise signs and widths.
NpyArray sampleArray(const DTypeCase &dtype) {
  if (dtype.kind == 'f')
    return NpyArray::fromDoubles({2, 3}, {0, -1.5, 3.25, 65504, -0.0, 1e-3},
                                 dtype.itemSize);
  return NpyArray::fromInt64s({2, 3}, {0, 1, -1, 127, -128, 42}, dtype.kind,
                              dtype.itemSize);
}

/// What sampleArray's element `i` reads back as.
int64_t expectedSampleInt(const DTypeCase &dtype, size_t i) {
  const int64_t values[] = {0, 1, -1, 127, -128, 42};
  int64_t value = values[i];
  if (dtype.kind == 'b')
    return value != 0;
  if (dtype.kind == 'u' && value < 0 && dtype.itemSize < 8)
    return value + (int64_t(1) << (8 * dtype.itemSize));
  if (dtype.kind == 'u' && value < 0)
    return std::numeric_limits<int64_t>::max(); // Saturates.
  return value;
}

void expectSameArray(const NpyArray &expected, const NpyArray &actual) {
  EXPECT_EQ(expected.kind, actual.kind);
  EXPECT_EQ(expected.itemSize, actual.itemSize);
  EXPECT_EQ(expected.shape, actual.shape);
  EXPECT_EQ(expected.data, actual.data);
}

class NpyFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/trnrt-npy-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    ASSERT_NE(nullptr, ::mkdtemp(buffer.data())) << std::strerror(errno);
    directory = buffer.data();
  }

  void TearDown() override {
    for (const std::string &name : listDirectory())
      ::unlink((directory + "/" + name).c_str());
    ::rmdir(directory.c_str());
  }

  std::string path(const std::string &name) const {
    return directory + "/" + name;
  }

  std::vector<std::string> listDirectory() const {
    std::vector<std::string> names;
    if (DIR *dir = ::opendir(directory.c_str())) {
      while (dirent *entry = ::readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..")
          names.push_back(name);
      }
      ::closedir(dir);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void writeBytes(const std::string &name, const uint8_t *bytes, size_t size) {
    FILE *file = std::fopen(path(name).c_str(), "wb");
    ASSERT_NE(nullptr, file);
    ASSERT_EQ(size, std::fwrite(bytes, 1, size, file));
    std::fclose(file);
  }

  std::vector<uint8_t> readBytes(const std::string &name) {
    std::vector<uint8_t> bytes;
    FILE *file = std::fopen(path(name).c_str(), "rb");
    if (!file)
      return bytes;
    int c;
    while ((c = std::fgetc(file)) != EOF)
      bytes.push_back(uint8_t(c));
    std::fclose(file);
    return bytes;
  }

  std::string directory;
};

//===----------------------------------------------------------------------===//
// NpyArray
//===----------------------------------------------------------------------===//

TEST(NpyArrayTest, DescrAndElementAccess) {
  for (const DTypeCase &dtype : kAllDTypes) {
    SCOPED_TRACE(dtype.descr);
    NpyArray array = sampleArray(dtype);
    EXPECT_EQ(dtype.descr, array.descr());
    std::string error;
    ASSERT_TRUE(array.validate(error)) << error;
    ASSERT_EQ(6, array.numElements());
    ASSERT_EQ(6u * dtype.itemSize, array.data.size());
    for (int64_t i = 0; i < 6; ++i) {
      if (dtype.kind == 'f') {
        const double values[] = {0, -1.5, 3.25, 65504, -0.0, 1e-3};
        double expected = dtype.itemSize == 2
                              ? roundToDType(values[i], DType::F16)
                          : dtype.itemSize == 4 ? double(float(values[i]))
                                                : values[i];
        EXPECT_EQ(expected, array.getDouble(i)) << i;
        EXPECT_EQ(std::signbit(expected), std::signbit(array.getDouble(i)));
        continue;
      }
      EXPECT_EQ(expectedSampleInt(dtype, i), array.getInt64(i)) << i;
      if (dtype.kind != 'u' || dtype.itemSize < 8) {
        EXPECT_EQ(double(expectedSampleInt(dtype, i)), array.getDouble(i));
      }
    }
  }
}

TEST(NpyArrayTest, FloatStorageRoundsToNearestEven) {
  NpyArray half = NpyArray::fromDoubles(
      {3}, {1 + std::ldexp(1.0, -11), 1e6, -std::ldexp(1.0, -25)}, 2);
  EXPECT_EQ((std::vector<uint8_t>{0x00, 0x3C, 0x00, 0x7C, 0x00, 0x80}),
            half.data);
  EXPECT_EQ(1.0, half.getDouble(0));
  EXPECT_TRUE(std::isinf(half.getDouble(1)));
  EXPECT_TRUE(std::signbit(half.getDouble(2)));

  NpyArray single = NpyArray::fromDoubles({1}, {0.1}, 4);
  EXPECT_EQ(double(0.1f), single.getDouble(0));
  NpyArray wide = NpyArray::fromDoubles({1}, {0.1}, 8);
  EXPECT_EQ(0.1, wide.getDouble(0));
}

TEST(NpyArrayTest, GetInt64TruncatesAndSaturates) {
  NpyArray floats = NpyArray::fromDoubles(
      {6}, {2.7, -2.7, std::nan(""), 1e300, -1e300, -0.5}, 8);
  EXPECT_EQ(2, floats.getInt64(0));
  EXPECT_EQ(-2, floats.getInt64(1));
  EXPECT_EQ(0, floats.getInt64(2));
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), floats.getInt64(3));
  EXPECT_EQ(std::numeric_limits<int64_t>::min(), floats.getInt64(4));
  EXPECT_EQ(0, floats.getInt64(5));

  NpyArray unsigned64 = NpyArray::fromInt64s({2}, {-1, 5}, 'u', 8);
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), unsigned64.getInt64(0));
  EXPECT_EQ(18446744073709551615.0, unsigned64.getDouble(0));
  NpyArray signed8 = NpyArray::fromInt64s({2}, {-1, 300}, 'i', 1);
  EXPECT_EQ(-1, signed8.getInt64(0));
  EXPECT_EQ(44, signed8.getInt64(1)); // Wraps modulo 256.
}

TEST(NpyArrayTest, OutOfRangeAccessIsHarmless) {
  NpyArray array = NpyArray::fromDoubles({2}, {1, 2}, 4);
  EXPECT_TRUE(std::isnan(array.getDouble(2)));
  EXPECT_TRUE(std::isnan(array.getDouble(-1)));
  EXPECT_EQ(0, array.getInt64(2));
  EXPECT_EQ(0, array.getInt64(std::numeric_limits<int64_t>::min()));
}

TEST(NpyArrayTest, NumElements) {
  NpyArray array;
  EXPECT_EQ(1, array.numElements()); // 0-d.
  array.shape = {2, 0, 5};
  EXPECT_EQ(0, array.numElements());
  array.shape = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), array.numElements());
}

TEST(NpyArrayTest, ValidateReportsInconsistentArrays) {
  std::string error;
  EXPECT_FALSE(
      NpyArray::fromDoubles({2, 3}, {1, 2, 3, 4, 5}, 4).validate(error));
  EXPECT_NE(std::string::npos, error.find("20 bytes")) << error;
  EXPECT_NE(std::string::npos, error.find("needs 24")) << error;
  EXPECT_FALSE(NpyArray::fromDoubles({1}, {1}, 3).validate(error));
  EXPECT_NE(std::string::npos, error.find("unsupported dtype '<f3'")) << error;
  EXPECT_FALSE(NpyArray::fromInt64s({1}, {1}, 'b', 4).validate(error));
  EXPECT_NE(std::string::npos, error.find("unsupported dtype")) << error;
  EXPECT_FALSE(NpyArray::fromInt64s({1}, {1}, 'f', 4).validate(error));
  NpyArray negative = NpyArray::fromDoubles({-1}, {}, 4);
  EXPECT_FALSE(negative.validate(error));
  EXPECT_NE(std::string::npos, error.find("negative")) << error;
}

//===----------------------------------------------------------------------===//
// .npy bytes
//===----------------------------------------------------------------------===//

TEST(NpyTest, EveryDTypeRoundTripsThroughBytes) {
  for (const DTypeCase &dtype : kAllDTypes) {
    SCOPED_TRACE(dtype.descr);
    NpyArray array = sampleArray(dtype);
    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(serializeNpy(array, bytes, error)) << error;

    // The layout NumPy writes: magic, version 1.0, and data 64-byte aligned
    // after a space-padded header ending in a newline.
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(0, std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8));
    size_t headerLength = bytes[8] | (bytes[9] << 8);
    EXPECT_EQ(0u, (10 + headerLength) % 64);
    std::string header(bytes.begin() + 10, bytes.begin() + 10 + headerLength);
    EXPECT_EQ(0u, header.find("{'descr': '" + std::string(dtype.descr) +
                              "', 'fortran_order': False, 'shape': (2, 3), }"))
        << header;
    EXPECT_EQ('\n', header.back());
    EXPECT_EQ(10 + headerLength + array.data.size(), bytes.size());

    NpyArray parsed;
    ASSERT_TRUE(parse(bytes, parsed, error)) << error;
    expectSameArray(array, parsed);
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_TRUE(std::isnan(array.getDouble(i))
                      ? std::isnan(parsed.getDouble(i))
                      : array.getDouble(i) == parsed.getDouble(i));
  }
}

TEST(NpyTest, ScalarEmptyAndOneDimensionalShapes) {
  struct Case {
    std::vector<int64_t> shape;
    size_t count;
    const char *shapeText;
  };
  for (const Case &c :
       {Case{{}, 1, "()"}, Case{{0, 3}, 0, "(0, 3)"}, Case{{3}, 3, "(3,)"}}) {
    NpyArray array =
        NpyArray::fromDoubles(c.shape, std::vector<double>(c.count, 2.5), 8);
    std::vector<uint8_t> bytes;
    std::string error;
    ASSERT_TRUE(serializeNpy(array, bytes, error)) << error;
    std::string text(bytes.begin(), bytes.end());
    EXPECT_NE(std::string::npos,
              text.find(std::string("'shape': ") + c.shapeText + ", }"));
    NpyArray parsed;
    ASSERT_TRUE(parse(bytes, parsed, error)) << error;
    expectSameArray(array, parsed);
  }
}

TEST(NpyTest, ParsesNumpyHeaderLayout) {
  // Exactly what np.save(np.arange(6, dtype='<f4').reshape(2, 3)) writes.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.resize(117, ' ');
  header += '\n';
  NpyArray expected = NpyArray::fromDoubles({2, 3}, {0, 1, 2, 3, 4, 5}, 4);
  NpyArray parsed;
  std::string error;
  ASSERT_TRUE(parse(makeNpy(header, expected.data), parsed, error)) << error;
  expectSameArray(expected, parsed);
}

TEST(NpyTest, ConvertsBigEndianData) {
  NpyArray parsed;
  std::string error;
  ASSERT_TRUE(parse(
      makeNpy(dictFor(">i4", "(3,)"), {0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF, 0xFF,
                                       0xFE, 0x12, 0x34, 0x56, 0x78}),
      parsed, error))
      << error;
  EXPECT_EQ("<i4", parsed.descr());
  EXPECT_EQ(1, parsed.getInt64(0));
  EXPECT_EQ(-2, parsed.getInt64(1));
  EXPECT_EQ(0x12345678, parsed.getInt64(2));
  EXPECT_EQ(0x78, parsed.data[8]);

  ASSERT_TRUE(
      parse(makeNpy(dictFor(">f8", "(1,)"), {0x3F, 0xF8, 0, 0, 0, 0, 0, 0}),
            parsed, error))
      << error;
  EXPECT_EQ(1.5, parsed.getDouble(0));
  ASSERT_TRUE(
      parse(makeNpy(dictFor(">f2", "(1,)"), {0xC0, 0x00}), parsed, error))
      << error;
  EXPECT_EQ(-2.0, parsed.getDouble(0));
  // Single bytes have no order, so any mark is fine.
  ASSERT_TRUE(parse(makeNpy(dictFor(">u1", "(1,)"), {200}), parsed, error))
      << error;
  EXPECT_EQ(200, parsed.getInt64(0));
  ASSERT_TRUE(
      parse(makeNpy(dictFor("=u2", "(1,)"), {0x01, 0x02}), parsed, error))
      << error;
  EXPECT_EQ(0x0201,
            parsed.getInt64(0)); // Native order on a little-endian host.
}

TEST(NpyTest, ConvertsFortranOrderToCOrder) {
  // np.save of np.asfortranarray(np.arange(6, dtype='>i4').reshape(2, 3)):
  // column-major and big-endian at once.
  NpyArray parsed;
  std::string error;
  ASSERT_TRUE(parse(makeNpy(dictFor(">i4", "(2, 3)", /*fortran=*/true),
                            {0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1,
                             0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5}),
                    parsed, error))
      << error;
  ASSERT_EQ((std::vector<int64_t>{2, 3}), parsed.shape);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(i, parsed.getInt64(i));

  // Three dimensions: element (i, j, k) of a 2x3x4 array sits at Fortran
  // offset i + 2j + 6k and should land at C offset 12i + 4j + k.
  std::vector<uint8_t> fortranData(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        fortranData[i + 2 * j + 6 * k] = uint8_t(12 * i + 4 * j + k);
  ASSERT_TRUE(parse(makeNpy(dictFor("|u1", "(2, 3, 4)", true), fortranData),
                    parsed, error))
      << error;
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(i, parsed.getInt64(i));

  // One dimension: Fortran and C order coincide.
  ASSERT_TRUE(
      parse(makeNpy(dictFor("<i2", "(2,)", true), {1, 0, 2, 0}), parsed, error))
      << error;
  EXPECT_EQ(2, parsed.getInt64(1));
}

TEST(NpyTest, AcceptsFormatVersions2And3AndLenientSyntax) {
  std::vector<uint8_t> data = {1, 0, 0, 0, 2, 0, 0, 0};
  for (unsigned major : {2u, 3u}) {
    NpyArray parsed;
    std::string error;
    ASSERT_TRUE(
        parse(makeNpy(dictFor("<i4", "(2,)"), data, major), parsed, error))
        << error;
    EXPECT_EQ(2, parsed.getInt64(1));
  }
  for (const char *header :
       {"{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<i4\"}",
        "{'descr':'<i4','fortran_order':False,'shape':(2L,)}   \n",
        "  {'descr': '<i4', 'fortran_order': False, 'shape': [2]}"}) {
    NpyArray parsed;
    std::string error;
    EXPECT_TRUE(parse(makeNpy(header, data), parsed, error))
        << header << ": " << error;
  }
}

TEST(NpyTest, RejectsBadMagicAndVersions) {
  expectParseError({}, {"not a .npy file", "magic"});
  expectParseError({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0},
                   {"not a .npy file", "magic", "PK"});
  expectParseError({0x93, 'N', 'U', 'M'}, {"truncated"});
  std::vector<uint8_t> bytes = makeNpy(dictFor("<f4", "(1,)"), {0, 0, 0, 0});
  bytes[6] = 4;
  expectParseError(bytes, {"version 4.0", "1.0, 2.0 and 3.0"});
  bytes[6] = 1;
  bytes[7] = 1;
  expectParseError(bytes, {"version 1.1"});
}

TEST(NpyTest, RejectsTruncatedAndOversizedData) {
  NpyArray array = NpyArray::fromDoubles({2, 3}, {0, 1, 2, 3, 4, 5}, 4);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(serializeNpy(array, bytes, error));

  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 1);
  expectParseError(truncated,
                   {"truncated data", "header says 6 elements of <f4",
                    "24 bytes", "23 bytes follow"});
  std::vector<uint8_t> extended = bytes;
  extended.push_back(0);
  expectParseError(extended, {"trailing", "25 bytes follow"});
  // Cut inside the header.
  std::vector<uint8_t> shortHeader(bytes.begin(), bytes.begin() + 40);
  expectParseError(shortHeader, {"truncated .npy header", "30 follow"});
  expectParseError(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 9),
                   {"truncated", "preamble"});

  // Every truncation fails cleanly.
  for (size_t length = 0; length < bytes.size(); ++length) {
    NpyArray parsed;
    EXPECT_FALSE(parseNpy(bytes.data(), length, parsed, error)) << length;
    EXPECT_FALSE(error.empty());
  }
}

TEST(NpyTest, RejectsUnsupportedDTypes) {
  std::vector<uint8_t> eightBytes(8);
  expectParseError(makeNpy(dictFor("<c8", "(1,)"), eightBytes),
                   {"unsupported dtype '<c8'", "complex", "<f4", ".astype"});
  expectParseError(makeNpy(dictFor("|O", "(1,)"), eightBytes),
                   {"unsupported dtype '|O'", "objects"});
  expectParseError(makeNpy(dictFor("<U2", "(1,)"), eightBytes),
                   {"unsupported dtype '<U2'", "strings"});
  expectParseError(makeNpy(dictFor("|S8", "(1,)"), eightBytes), {"strings"});
  expectParseError(makeNpy(dictFor("<M8[ns]", "(1,)"), eightBytes), {"dates"});
  expectParseError(makeNpy(dictFor("<f16", "(1,)"), eightBytes),
                   {"unsupported dtype '<f16'"});
  expectParseError(makeNpy(dictFor("<f1", "(1,)"), eightBytes),
                   {"unsupported dtype '<f1'"});
  expectParseError(makeNpy(dictFor("<b2", "(1,)"), eightBytes),
                   {"unsupported dtype '<b2'"});
  expectParseError(makeNpy(dictFor("f8", "(1,)"), eightBytes),
                   {"unsupported dtype 'f8'", "byte-order"});
  expectParseError(makeNpy(dictFor("|f8", "(1,)"), eightBytes),
                   {"'|f8' has no byte order", "'<f8'"});
  expectParseError(
      makeNpy("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': "
              "False, 'shape': (1,), }",
              eightBytes),
      {"structured dtypes are not supported"});
}

TEST(NpyTest, RejectsMalformedHeaders) {
  std::vector<uint8_t> data(4);
  expectParseError(makeNpy("{'descr': '<f4', 'fortran_order': False}", data),
                   {"malformed .npy header", "missing key 'shape'"});
  expectParseError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
              "'extra': 1}",
              data),
      {"malformed", "unexpected key 'extra'"});
  expectParseError(
      makeNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
              "'shape': (1,)}",
              data),
      {"duplicate key 'descr'"});
  expectParseError(
      makeNpy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", data),
      {"expected True or False"});
  expectParseError(makeNpy("{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (1,)} trailing",
                           data),
                   {"unexpected text after the dict"});
  expectParseError(makeNpy("{'descr': '<f4", data), {"unterminated string"});
  expectParseError(makeNpy("", data), {"malformed", "expected '{'"});
  expectParseError(makeNpy(std::string("{'descr\0': '<f4'}", 17), data),
                   {"malformed", "\\x00"});
}

TEST(NpyTest, RejectsAbsurdShapes) {
  std::vector<uint8_t> data(4);
  expectParseError(makeNpy(dictFor("<f4", "(4611686018427387904, 4)"), data),
                   {"shape (4611686018427387904, 4) is too large"});
  expectParseError(makeNpy(dictFor("<f8", "(4294967296, 4294967296)"), data),
                   {"too large"});
  expectParseError(makeNpy(dictFor("<f4", "(99999999999999999999,)"), data),
                   {"does not fit in 64 bits"});
  expectParseError(makeNpy(dictFor("<f4", "(-1,)"), data),
                   {"negative dimension"});
  std::string manyDims = "(";
  for (int i = 0; i < 65; ++i)
    manyDims += "1, ";
  manyDims += ")";
  expectParseError(makeNpy(dictFor("<f4", manyDims), data),
                   {"more than 64 dimensions"});
  // A zero dimension makes the array empty whatever the others say.
  NpyArray parsed;
  std::string error;
  EXPECT_TRUE(parse(makeNpy(dictFor("<f4", "(0, 4611686018427387904)"), {}),
                    parsed, error))
      << error;
  EXPECT_EQ(0, parsed.numElements());
}

TEST(NpyTest, SurvivesEveryBitFlipInThePreambleAndHeader) {
  NpyArray array = NpyArray::fromDoubles({2, 3}, {0, 1, 2, 3, 4, 5}, 4);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(serializeNpy(array, bytes, error));
  size_t headerEnd = bytes.size() - array.data.size();
  unsigned accepted = 0;
  for (size_t byte = 0; byte < headerEnd; ++byte) {
    for (unsigned bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> flipped = bytes;
      flipped[byte] ^= uint8_t(1u << bit);
      NpyArray parsed;
      if (parse(flipped, parsed, error)) {
        // Only harmless flips can pass, e.g. whitespace to whitespace.
        ++accepted;
        std::string why;
        EXPECT_TRUE(parsed.validate(why)) << why;
        EXPECT_EQ(array.shape, parsed.shape) << byte << ":" << bit;
      } else {
        EXPECT_FALSE(error.empty());
        EXPECT_EQ(std::string::npos, error.find('\n')) << error;
      }
    }
  }
  // Most flips must be caught; the few accepted ones are in the padding.
  EXPECT_LT(accepted, 8 * headerEnd / 4);
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST_F(NpyFileTest, EveryDTypeRoundTripsThroughNpyFiles) {
  for (const DTypeCase &dtype : kAllDTypes) {
    SCOPED_TRACE(dtype.descr);
    NpyArray array = sampleArray(dtype);
    std::string error;
    ASSERT_TRUE(writeNpy(path("a.npy"), array, error)) << error;
    NpyArray read;
    ASSERT_TRUE(readNpy(path("a.npy"), read, error)) << error;
    expectSameArray(array, read);
  }
  EXPECT_EQ(std::vector<std::string>{"a.npy"}, listDirectory());
}

TEST_F(NpyFileTest, WrittenFilesGetTheUsualPermissions) {
  mode_t mask = ::umask(022);
  ::umask(mask);
  std::string error;
  ASSERT_TRUE(
      writeNpy(path("a.npy"), NpyArray::fromDoubles({1}, {1}, 4), error));
  ASSERT_TRUE(writeNpz(path("a.npz"),
                       {{"x", NpyArray::fromDoubles({1}, {1}, 4)}}, error));
  for (const char *name : {"a.npy", "a.npz"}) {
    struct stat status;
    ASSERT_EQ(0, ::stat(path(name).c_str(), &status));
    EXPECT_EQ(0666 & ~mask, status.st_mode & 0777) << name;
  }
}

TEST_F(NpyFileTest, EveryDTypeRoundTripsThroughOneNpz) {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (const DTypeCase &dtype : kAllDTypes)
    arrays.emplace_back(std::string("array_") + dtype.descr[1] +
                            std::to_string(dtype.itemSize),
                        sampleArray(dtype));
  arrays.emplace_back("scalar", NpyArray::fromDoubles({}, {7}, 8));
  arrays.emplace_back("empty", NpyArray::fromInt64s({0, 2}, {}, 'i', 4));
  std::string error;
  ASSERT_TRUE(writeNpz(path("all.npz"), arrays, error)) << error;
  std::vector<std::pair<std::string, NpyArray>> read;
  ASSERT_TRUE(readNpz(path("all.npz"), read, error)) << error;
  ASSERT_EQ(arrays.size(), read.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    SCOPED_TRACE(arrays[i].first);
    EXPECT_EQ(arrays[i].first, read[i].first);
    expectSameArray(arrays[i].second, read[i].second);
  }
  EXPECT_EQ(std::vector<std::string>{"all.npz"}, listDirectory());

  // Entries are stored uncompressed like np.savez, so the raw .npy bytes
  // appear verbatim in the file.
  std::vector<uint8_t> file = readBytes("all.npz");
  std::vector<uint8_t> firstNpy;
  ASSERT_TRUE(serializeNpy(arrays[0].second, firstNpy, error));
  EXPECT_NE(file.end(), std::search(file.begin(), file.end(), firstNpy.begin(),
                                    firstNpy.end()));
  std::string text(file.begin(), file.end());
  EXPECT_NE(std::string::npos, text.find("array_f2.npy"));
}

TEST_F(NpyFileTest, EmptyNpz) {
  std::string error;
  ASSERT_TRUE(writeNpz(path("empty.npz"), {}, error)) << error;
  EXPECT_EQ(22u, readBytes("empty.npz").size());
  std::vector<std::pair<std::string, NpyArray>> read = {{"stale", NpyArray()}};
  ASSERT_TRUE(readNpz(path("empty.npz"), read, error)) << error;
  EXPECT_TRUE(read.empty());
}

void checkNumpyArchive(
    const std::vector<std::pair<std::string, NpyArray>> &read) {
  ASSERT_EQ(4u, read.size());
  EXPECT_EQ("half", read[0].first);
  EXPECT_EQ("<f2", read[0].second.descr());
  EXPECT_EQ(1.5, read[0].second.getDouble(0));
  EXPECT_EQ(-2.0, read[0].second.getDouble(1));
  EXPECT_EQ(65504.0, read[0].second.getDouble(2));

  EXPECT_EQ("flags", read[1].first);
  EXPECT_EQ("|b1", read[1].second.descr());
  EXPECT_EQ((std::vector<int64_t>{1, 2}), read[1].second.shape);
  EXPECT_EQ(1, read[1].second.getInt64(0));
  EXPECT_EQ(0, read[1].second.getInt64(1));

  EXPECT_EQ("big", read[2].first);
  EXPECT_EQ("<f8", read[2].second.descr()); // Converted to little-endian.
  EXPECT_EQ(0.1, read[2].second.getDouble(0));
  EXPECT_EQ(-3.0, read[2].second.getDouble(1));

  EXPECT_EQ("fort", read[3].first);
  EXPECT_EQ("<u2", read[3].second.descr());
  EXPECT_EQ((std::vector<int64_t>{2, 3}), read[3].second.shape);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(i, read[3].second.getInt64(i));
}

TEST_F(NpyFileTest, ReadsNumpySavez) {
  writeBytes("stored.npz", kNumpySavez, sizeof(kNumpySavez));
  std::vector<std::pair<std::string, NpyArray>> read;
  std::string error;
  ASSERT_TRUE(readNpz(path("stored.npz"), read, error)) << error;
  checkNumpyArchive(read);
}

TEST_F(NpyFileTest, ReadsNumpySavezCompressed) {
  writeBytes("deflated.npz", kNumpySavezCompressed,
             sizeof(kNumpySavezCompressed));
  std::vector<std::pair<std::string, NpyArray>> read;
  std::string error;
  ASSERT_TRUE(readNpz(path("deflated.npz"), read, error)) << error;
  checkNumpyArchive(read);
}

TEST_F(NpyFileTest, NpzEntryErrorsNameTheFileAndEntry) {
  writeBytes("in.npz", kTruncatedEntryNpz, sizeof(kTruncatedEntryNpz));
  std::vector<std::pair<std::string, NpyArray>> read;
  std::string error;
  ASSERT_FALSE(readNpz(path("in.npz"), read, error));
  for (const char *keyword :
       {"in.npz: entry 'x'", "truncated", "header says 64 elements of <f4",
        "100 bytes follow"})
    EXPECT_NE(std::string::npos, error.find(keyword))
        << "'" << keyword << "' not in: " << error;
}

TEST_F(NpyFileTest, DetectsCorruptNpzData) {
  NpyArray array = NpyArray::fromInt64s({4}, {0x11223344, 2, 3, 4}, 'i', 4);
  std::string error;
  ASSERT_TRUE(writeNpz(path("a.npz"), {{"x", array}}, error)) << error;
  std::vector<uint8_t> file = readBytes("a.npz");
  const uint8_t marker[] = {0x44, 0x33, 0x22, 0x11};
  auto found = std::search(file.begin(), file.end(), marker, marker + 4);
  ASSERT_NE(file.end(), found);
  *found ^= 0x01; // Breaks the entry's CRC-32.
  writeBytes("a.npz", file.data(), file.size());
  std::vector<std::pair<std::string, NpyArray>> read;
  ASSERT_FALSE(readNpz(path("a.npz"), read, error));
  EXPECT_NE(std::string::npos, error.find("a.npz: entry 'x'")) << error;
  EXPECT_NE(std::string::npos, error.find("CRC")) << error;
}

TEST_F(NpyFileTest, ReadErrorsNameThePath) {
  std::vector<std::pair<std::string, NpyArray>> entries;
  NpyArray array;
  std::string error;
  EXPECT_FALSE(readNpz(path("missing.npz"), entries, error));
  EXPECT_NE(std::string::npos, error.find(path("missing.npz"))) << error;
  EXPECT_FALSE(readNpy(path("missing.npy"), array, error));
  EXPECT_NE(std::string::npos, error.find(path("missing.npy"))) << error;
  EXPECT_NE(std::string::npos, error.find("No such file")) << error;
  EXPECT_FALSE(readNpy(directory, array, error));
  EXPECT_NE(std::string::npos, error.find("not a regular file")) << error;

  ASSERT_TRUE(
      writeNpy(path("a.npy"), NpyArray::fromDoubles({1}, {1}, 4), error));
  EXPECT_FALSE(readNpz(path("a.npy"), entries, error));
  EXPECT_NE(std::string::npos, error.find("zip")) << error;
  writeBytes("b.npy", kNumpySavez, 10);
  EXPECT_FALSE(readNpy(path("b.npy"), array, error));
  EXPECT_NE(std::string::npos, error.find(path("b.npy") + ": not a .npy file"))
      << error;
}

TEST_F(NpyFileTest, FailedWritesLeaveNoPartialFiles) {
  std::string error;
  NpyArray good = NpyArray::fromDoubles({2}, {1, 2}, 4);
  NpyArray bad = NpyArray::fromDoubles({2, 3}, {1, 2}, 4); // Too few values.
  ASSERT_TRUE(writeNpz(path("keep.npz"), {{"x", good}}, error)) << error;
  ASSERT_TRUE(writeNpy(path("keep.npy"), good, error)) << error;
  std::vector<uint8_t> originalNpz = readBytes("keep.npz");
  std::vector<uint8_t> originalNpy = readBytes("keep.npy");

  EXPECT_FALSE(writeNpz(path("keep.npz"), {{"x", good}, {"y", bad}}, error));
  EXPECT_NE(std::string::npos, error.find("array 'y'")) << error;
  EXPECT_NE(std::string::npos, error.find("needs 24")) << error;
  EXPECT_FALSE(writeNpy(path("keep.npy"), bad, error));
  EXPECT_FALSE(writeNpz(path("keep.npz"), {{"x", good}, {"x", good}}, error));
  EXPECT_NE(std::string::npos, error.find("duplicate array name 'x'")) << error;
  EXPECT_FALSE(writeNpz(path("keep.npz"), {{"", good}}, error));
  EXPECT_NE(std::string::npos, error.find("empty name")) << error;

  EXPECT_FALSE(writeNpz(path("no/such/dir.npz"), {{"x", good}}, error));
  EXPECT_NE(std::string::npos, error.find("no/such/dir.npz")) << error;
  EXPECT_FALSE(writeNpy(path("no/such/dir.npy"), good, error));
  EXPECT_NE(std::string::npos, error.find("No such file")) << error;

  EXPECT_EQ(originalNpz, readBytes("keep.npz"));
  EXPECT_EQ(originalNpy, readBytes("keep.npy"));
  EXPECT_EQ((std::vector<std::string>{"keep.npy", "keep.npz"}),
            listDirectory());
}

TEST_F(NpyFileTest, OverwritesExistingFiles) {
  std::string error;
  ASSERT_TRUE(writeNpz(path("a.npz"),
                       {{"x", NpyArray::fromDoubles({1}, {1}, 4)}}, error));
  ASSERT_TRUE(writeNpz(path("a.npz"),
                       {{"y", NpyArray::fromDoubles({1}, {2}, 4)}}, error));
  std::vector<std::pair<std::string, NpyArray>> read;
  ASSERT_TRUE(readNpz(path("a.npz"), read, error)) << error;
  ASSERT_EQ(1u, read.size());
  EXPECT_EQ("y", read[0].first);
  EXPECT_EQ(2.0, read[0].second.getDouble(0));
}

} // namespace
