/* SPDX-License-Identifier: MIT */
/*
 * poke(p): one thread writes 1 to *p. With p in the null page it faults, on
 * a GPU (an illegal address) and on the stand-in driver (its one modelled
 * fault); the test tenants that fault on purpose (hostile_check, soak_check)
 * load it.
 */
#ifndef OOO_TESTS_POKE_PTX_H
#define OOO_TESTS_POKE_PTX_H

static const char poke_ptx[] = ".version 7.8\n"
			       ".target sm_90\n"
			       ".address_size 64\n"
			       ".visible .entry poke(.param .u64 p)\n"
			       "{\n"
			       " .reg .b64 a;\n"
			       " .reg .b32 v;\n"
			       " ld.param.u64 a, [p];\n"
			       " cvta.to.global.u64 a, a;\n"
			       " mov.u32 v, 1;\n"
			       " st.global.u32 [a], v;\n"
			       " ret;\n"
			       "}\n";

#endif
