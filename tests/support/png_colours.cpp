// png_colours FILE.png RRGGBB...: how many of the picture's pixels are within a distance of 12
// (per channel) of one of the given colours, for the browser tests (a screenshot carries the
// heatmap's colours). Prints "pixels N near M distinct D", exits 1 when the file is not a PNG.

#include <png.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: png_colours FILE.png [RRGGBB...]\n", stderr);
    return 2;
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, argv[1])) {
    std::fprintf(stderr, "png_colours: %s: %s\n", argv[1], image.message);
    return 1;
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    std::fprintf(stderr, "png_colours: %s: %s\n", argv[1], image.message);
    return 1;
  }
  struct Colour {
    int r, g, b;
  };
  std::vector<Colour> wanted;
  for (int a = 2; a < argc; ++a) {
    const long v = std::strtol(argv[a], nullptr, 16);
    wanted.push_back({static_cast<int>((v >> 16) & 255), static_cast<int>((v >> 8) & 255),
                      static_cast<int>(v & 255)});
  }
  std::size_t near = 0;
  std::set<long> distinct;
  for (std::size_t k = 0; k + 2 < pixels.size(); k += 3) {
    const int r = pixels[k], g = pixels[k + 1], b = pixels[k + 2];
    distinct.insert((long{r} << 16) | (long{g} << 8) | b);
    for (const Colour& c : wanted) {
      if (std::abs(r - c.r) <= 12 && std::abs(g - c.g) <= 12 && std::abs(b - c.b) <= 12) {
        ++near;
        break;
      }
    }
  }
  std::printf("pixels %zu near %zu distinct %zu\n", pixels.size() / 3, near, distinct.size());
  return 0;
}
