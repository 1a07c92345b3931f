#include "rank_agent/agent.h"

int main(int argc, char** argv) { return pypto::rank::pypto_rank_main(argc, argv); }
