// Test support: Intel AMX's int8 tile instructions emulated on a CPU without AMX, so that ggml's
// AMX path (the AMX buffer type and its tile kernels, ggml-cpu/amx/) runs in the tests of a machine
// that lacks it. Loaded with LD_PRELOAD (libclef_amx_emulator.so) into a test process:
//
//  - `syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)` (ggml_amx_init: the
//    kernel's permission to use the tile state) answers 0 where the CPU would refuse;
//  - every AMX instruction raises #UD (SIGILL) on such a CPU: the handler decodes it at the
//  faulting
//    RIP, carries it out on a per-thread copy of the tile state and returns past it.
//
// Emulated, as the Intel SDM (vol. 2, "TILELOADD", "TDPBSSD"...) defines them with palette 1:
// LDTILECFG, STTILECFG, TILERELEASE, TILEZERO, TILELOADD(T1), TILESTORED and TDPB{SS,SU,US,UU}D.
// What hardware refuses is refused here too, loudly (a message and abort): a config that is not
// palette 0 or a valid palette 1, a tile used while unconfigured (0 rows or 0 bytes per row), a dot
// product whose shapes disagree. That is what makes a garbage tile config (the GCC 12 bug that
// cmake/patches/ggml-cpu-amx-fixes.diff fixes) fail a test here as it crashes a real AMX CPU.
// `clef_amx_emulated_instructions()` counts the instructions carried out (for a test to see
// that the tile path ran).
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kTiles = 8;
constexpr int kMaxRows = 16;
constexpr int kMaxColsb = 64;

/// One thread's tile state (the XTILECFG and XTILEDATA state components).
struct TileState {
  bool configured = false;  // palette 1 loaded
  std::uint8_t palette = 0;
  std::uint8_t start_row = 0;
  std::uint16_t colsb[kTiles] = {};
  std::uint8_t rows[kTiles] = {};
  alignas(64) std::uint8_t data[kTiles][kMaxRows][kMaxColsb] = {};
};

thread_local TileState tiles;
std::atomic<long> emulated{0};

[[noreturn]] void refuse(const char* what) {
  const char prefix[] = "clef AMX emulator: #UD/#GP: ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, what, std::strlen(what));
  (void)!write(2, "\n", 1);
  std::abort();
}

/// ucontext's general register of an x86-64 register number (0 rax ... 15 r15).
greg_t& reg(ucontext_t* uc, int n) {
  static constexpr int kMap[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                                   REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                   REG_R12, REG_R13, REG_R14, REG_R15};
  return uc->uc_mcontext.gregs[kMap[n]];
}

/// A decoded VEX-encoded instruction of map 0F38 with its memory operand (when mod != 3).
struct Decoded {
  int length = 0;
  std::uint8_t opcode = 0;
  int pp = 0;    // 0 none, 1 66, 2 F3, 3 F2
  int vvvv = 0;  // the extra register operand
  int mod = 0;
  int reg = 0;  // ModRM.reg (with VEX.R)
  int rm = 0;   // ModRM.rm (with VEX.B), for mod == 3
  // memory operand: address = base + disp; for sibmem the stride is index << scale
  std::uintptr_t address = 0;
  std::intptr_t stride = 0;
  bool sib = false;
};

bool decode(const std::uint8_t* p, ucontext_t* uc, Decoded& d) {
  if (p[0] != 0xC4) return false;  // AMX instructions are 3-byte VEX
  const int r = ((p[1] >> 7) & 1) ^ 1;
  const int x = ((p[1] >> 6) & 1) ^ 1;
  const int b = ((p[1] >> 5) & 1) ^ 1;
  if ((p[1] & 0x1F) != 2) return false;                        // map 0F38
  if ((p[2] & 0x80) != 0 || (p[2] & 0x04) != 0) return false;  // W0, L0
  d.vvvv = (~p[2] >> 3) & 0xF;
  d.pp = p[2] & 3;
  d.opcode = p[3];
  const std::uint8_t modrm = p[4];
  d.mod = modrm >> 6;
  d.reg = ((modrm >> 3) & 7) | (r << 3);
  const int rm_low = modrm & 7;
  d.rm = rm_low | (b << 3);
  int at = 5;
  if (d.mod == 3) {
    d.length = at;
    return true;
  }
  std::uintptr_t base = 0;
  std::intptr_t disp = 0;
  bool rip_relative = false;
  if (rm_low == 4) {
    d.sib = true;
    const std::uint8_t sib = p[at++];
    const int scale = sib >> 6;
    const int index = ((sib >> 3) & 7) | (x << 3);
    const int base_reg = (sib & 7) | (b << 3);
    if (index != 4) d.stride = static_cast<std::intptr_t>(reg(uc, index)) << scale;
    if ((sib & 7) == 5 && d.mod == 0) {
      std::int32_t v;
      std::memcpy(&v, p + at, 4);
      at += 4;
      disp = v;
    } else {
      base = static_cast<std::uintptr_t>(reg(uc, base_reg));
    }
  } else if (rm_low == 5 && d.mod == 0) {
    rip_relative = true;
    std::int32_t v;
    std::memcpy(&v, p + at, 4);
    at += 4;
    disp = v;
  } else {
    base = static_cast<std::uintptr_t>(reg(uc, d.rm));
  }
  if (d.mod == 1) {
    disp = static_cast<std::int8_t>(p[at++]);
  } else if (d.mod == 2) {
    std::int32_t v;
    std::memcpy(&v, p + at, 4);
    at += 4;
    disp = v;
  }
  d.length = at;
  if (rip_relative) base = reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(at);
  d.address = base + static_cast<std::uintptr_t>(disp);
  return true;
}

void check_tile(int t) {
  if (!tiles.configured) refuse("tile instruction without a palette 1 config");
  if (t >= kTiles) refuse("tile register out of range");
  if (tiles.rows[t] == 0 || tiles.colsb[t] == 0)
    refuse("tile used while unconfigured (0 rows or bytes)");
}

void load_config(const std::uint8_t* cfg) {
  TileState fresh;
  fresh.palette = cfg[0];
  fresh.start_row = cfg[1];
  if (fresh.palette == 0) {  // the init state
    tiles = fresh;
    return;
  }
  if (fresh.palette != 1) refuse("ldtilecfg: palette is neither 0 nor 1");
  for (int i = 2; i < 16; ++i) {
    if (cfg[i] != 0) refuse("ldtilecfg: reserved bytes 2-15 are not zero");
  }
  for (int t = 0; t < 16; ++t) {
    std::uint16_t colsb;
    std::memcpy(&colsb, cfg + 16 + 2 * t, 2);
    const std::uint8_t rows = cfg[48 + t];
    if (t >= kTiles) {
      if (colsb != 0 || rows != 0) refuse("ldtilecfg: tiles 8-15 configured");
      continue;
    }
    if (colsb > kMaxColsb || rows > kMaxRows) refuse("ldtilecfg: a tile larger than 16 x 64 bytes");
    if ((colsb == 0) != (rows == 0))
      refuse("ldtilecfg: a tile with rows but no bytes (or the reverse)");
    fresh.colsb[t] = colsb;
    fresh.rows[t] = rows;
  }
  fresh.configured = true;
  tiles = fresh;
}

void store_config(std::uint8_t* cfg) {
  std::memset(cfg, 0, 64);
  cfg[0] = tiles.palette;
  cfg[1] = tiles.start_row;
  for (int t = 0; t < kTiles; ++t) {
    std::memcpy(cfg + 16 + 2 * t, &tiles.colsb[t], 2);
    cfg[48 + t] = tiles.rows[t];
  }
}

/// TDPB??D dst += a . b with a's and b's bytes signed (true) or unsigned.
void dot(int dst, int a, int b, bool a_signed, bool b_signed) {
  check_tile(dst);
  check_tile(a);
  check_tile(b);
  const int m_rows = tiles.rows[dst];
  const int k_dwords = tiles.colsb[a] / 4;
  const int n_dwords = tiles.colsb[dst] / 4;
  if (tiles.rows[a] != m_rows || tiles.rows[b] != k_dwords || tiles.colsb[b] != tiles.colsb[dst] ||
      tiles.colsb[a] % 4 != 0 || tiles.colsb[dst] % 4 != 0) {
    refuse("tdpb*d: tile shapes disagree (dst M x 4N, a M x 4K, b K x 4N)");
  }
  for (int m = 0; m < m_rows; ++m) {
    std::int32_t acc[kMaxColsb / 4];
    std::memcpy(acc, tiles.data[dst][m], static_cast<std::size_t>(n_dwords) * 4);
    for (int k = 0; k < k_dwords; ++k) {
      std::int32_t av[4];
      for (int i = 0; i < 4; ++i) {
        const std::uint8_t v = tiles.data[a][m][4 * k + i];
        av[i] = a_signed ? static_cast<std::int8_t>(v) : v;
      }
      for (int n = 0; n < n_dwords; ++n) {
        const std::uint8_t* bv = &tiles.data[b][k][4 * n];
        std::int32_t sum = 0;
        for (int i = 0; i < 4; ++i)
          sum += av[i] * (b_signed ? static_cast<std::int8_t>(bv[i]) : bv[i]);
        // the dword sums wrap modulo 2^32, as the instruction's do
        acc[n] = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc[n]) +
                                           static_cast<std::uint32_t>(sum));
      }
    }
    std::memcpy(tiles.data[dst][m], acc, static_cast<std::size_t>(n_dwords) * 4);
    std::memset(tiles.data[dst][m] + n_dwords * 4, 0,
                static_cast<std::size_t>(kMaxColsb - n_dwords * 4));
  }
  for (int m = m_rows; m < kMaxRows; ++m) std::memset(tiles.data[dst][m], 0, kMaxColsb);
}

bool emulate(const Decoded& d) {
  switch (d.opcode) {
    case 0x49:
      if (d.pp == 0 && d.mod != 3 && (d.reg & 7) == 0) {  // LDTILECFG m512
        load_config(reinterpret_cast<const std::uint8_t*>(d.address));
        return true;
      }
      if (d.pp == 1 && d.mod != 3 && (d.reg & 7) == 0) {  // STTILECFG m512
        store_config(reinterpret_cast<std::uint8_t*>(d.address));
        return true;
      }
      if (d.pp == 0 && d.mod == 3 && d.reg == 0 && d.rm == 0) {  // TILERELEASE
        tiles = TileState{};
        return true;
      }
      if (d.pp == 3 && d.mod == 3 && (d.rm & 7) == 0) {  // TILEZERO tmm
        check_tile(d.reg);
        std::memset(tiles.data[d.reg], 0, sizeof tiles.data[d.reg]);
        return true;
      }
      return false;
    case 0x4B: {
      if (d.mod == 3 || !d.sib) return false;
      if (d.pp == 3 || d.pp == 1) {  // TILELOADD / TILELOADDT1 tmm, sibmem
        check_tile(d.reg);
        std::memset(tiles.data[d.reg], 0, sizeof tiles.data[d.reg]);
        for (int row = 0; row < tiles.rows[d.reg]; ++row) {
          std::memcpy(tiles.data[d.reg][row],
                      reinterpret_cast<const void*>(d.address +
                                                    static_cast<std::uintptr_t>(row * d.stride)),
                      tiles.colsb[d.reg]);
        }
        tiles.start_row = 0;
        return true;
      }
      if (d.pp == 2) {  // TILESTORED sibmem, tmm
        check_tile(d.reg);
        for (int row = 0; row < tiles.rows[d.reg]; ++row) {
          std::memcpy(
              reinterpret_cast<void*>(d.address + static_cast<std::uintptr_t>(row * d.stride)),
              tiles.data[d.reg][row], tiles.colsb[d.reg]);
        }
        tiles.start_row = 0;
        return true;
      }
      return false;
    }
    case 0x5E:  // TDPBSSD (F2), TDPBSUD (F3), TDPBUSD (66), TDPBUUD (none): dst, a (rm), b (vvvv)
      if (d.mod != 3) return false;
      dot(d.reg, d.rm, d.vvvv, d.pp == 3 || d.pp == 2, d.pp == 3 || d.pp == 1);
      return true;
    default:
      return false;
  }
}

struct sigaction previous_sigill;

void on_sigill(int sig, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const auto* rip = reinterpret_cast<const std::uint8_t*>(uc->uc_mcontext.gregs[REG_RIP]);
  Decoded d;
  if (decode(rip, uc, d) && emulate(d)) {
    uc->uc_mcontext.gregs[REG_RIP] += d.length;
    emulated.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Not an AMX instruction: what would have happened without the emulator.
  if (previous_sigill.sa_flags & SA_SIGINFO) {
    previous_sigill.sa_sigaction(sig, info, context);
    return;
  }
  signal(SIGILL, SIG_DFL);
  raise(SIGILL);
}

__attribute__((constructor)) void install() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_sigill;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, &previous_sigill);
}

}  // namespace

extern "C" {

/// AMX instructions this process has carried out in the emulator so far.
long clef_amx_emulated_instructions() {
  return emulated.load(std::memory_order_relaxed);
}

/// libc's syscall(2), except that the request for the AMX tile data state (ggml_amx_init)
/// succeeds: the emulator holds that state itself.
long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  long a[6];
  for (long& v : a) v = va_arg(args, long);
  va_end(args);
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  if (number == SYS_arch_prctl && a[0] == kArchReqXcompPerm && a[1] == kXfeatureXtiledata) return 0;
  using Syscall = long (*)(long, ...);
  static const auto real = reinterpret_cast<Syscall>(dlsym(RTLD_NEXT, "syscall"));
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
}
