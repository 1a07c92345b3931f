#include "coordinator/cli.h"

int main(int argc, char** argv) { return pypto::coord::pypto_coord_main(argc, argv); }
